// `tools-runner tail`: prints the runner's live execution feed (admin port, WebSocket /live).
// Positional `json` prints the raw messages instead of one readable line each.

import WebSocket from 'ws';
import type { Command } from '../command.js';

export const tailCommand: Command = {
  name: 'tail',
  summary: 'print executions as they happen (from the admin port)',
  usage: 'tools-runner tail [json] [--admin-host H] [--admin-port P]',
  async run({ config, positionals, out, err, signal }) {
    const host = config.adminHost.includes(':') ? `[${config.adminHost}]` : config.adminHost;
    const url = `ws://${host}:${config.adminPort}/live`;
    const raw = positionals[0] === 'json';
    return new Promise<number>((resolve) => {
      const ws = new WebSocket(url, config.adminToken !== undefined ? { headers: { authorization: `Bearer ${config.adminToken}` } } : {});
      const onAbort = (): void => ws.close();
      signal.addEventListener('abort', onAbort, { once: true });
      ws.on('open', () => err(`tailing ${url}`));
      ws.on('message', (data) => {
        const text = data.toString();
        if (raw) return out(text);
        try {
          const m = JSON.parse(text) as Record<string, unknown>;
          const what = m['type'] === 'execution:started' ? 'start ' : 'finish';
          const detail = m['type'] === 'execution:finished'
            ? ` ${String(m['status'])}${m['code'] ? ` ${String(m['code'])}` : ''} ${Number(m['durationMs']).toFixed(1)}ms`
            : '';
          out(`${String(m['ts'])} ${what} ${String(m['tool'])}${detail} rid=${String(m['rid'])}`);
        } catch {
          out(text);
        }
      });
      ws.on('error', (error) => err(`tools-runner tail: ${url}: ${error.message}`));
      ws.on('close', () => {
        signal.removeEventListener('abort', onAbort);
        resolve(signal.aborted ? 0 : 1);
      });
    });
  },
};
