// `tools-runner tail`: prints the runner's live execution feed (admin port, WebSocket /live): calls
// starting, their progress reports (context.progress), finishing and ending without an answer.
// Positional `json` prints the raw messages instead of one readable line each. Names and ids in the
// feed are chosen by agents: every field is printed through safeField (no terminal escapes).

import WebSocket from 'ws';
import { EXIT, type CommandContext } from '../command.js';
import { safeField } from '../sanitize.js';

/** A progress report on one line: a `{text}` report as its text, any other value as compact JSON (escaped). */
function progressText(value: unknown): string {
  const text = (value as { text?: unknown } | null)?.text;
  if (typeof text === 'string' && Object.keys(value as object).length === 1) return safeField(text);
  return safeField(JSON.stringify(value) ?? 'null');
}

/** One readable line of a /live message (every agent-chosen field escaped). */
export function renderLiveMessage(text: string): string {
  let m: Record<string, unknown>;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return safeField(text);
    m = parsed as Record<string, unknown>;
  } catch {
    return safeField(text);
  }
  const what =
    m['type'] === 'execution:started'
      ? 'start '
      : m['type'] === 'execution:progress'
        ? 'progress'
        : m['type'] === 'execution:finished'
          ? 'finish'
          : m['type'] === 'execution:ended'
            ? 'end   '
            : safeField(m['type']);
  const duration = Number(m['durationMs']);
  const detail =
    m['type'] === 'execution:finished'
      ? ` ${safeField(m['status'])}${m['code'] ? ` ${safeField(m['code'])}` : ''} ${Number.isFinite(duration) ? duration.toFixed(1) : '?'}ms`
      : m['type'] === 'execution:ended'
        ? ` ${safeField(m['outcome'])} (no answer from this run)`
        : m['type'] === 'execution:progress'
          ? ` #${safeField(m['seq'])} ${progressText(m['value'])}`
          : '';
  // A RAP tool's displayScript line ("PR #42 on acme/widgets"), escaped like every agent-chosen field.
  const display = m['display'] !== undefined ? ` — ${safeField(m['display'])}` : '';
  return `${safeField(m['ts'])} ${what} ${safeField(m['tool'])}${detail} rid=${safeField(m['rid'])}${display}`;
}

/** Runs `tools-runner tail` until SIGINT/SIGTERM or the feed closes. */
export async function run({ config, positionals, logger, out, err, signal }: CommandContext): Promise<number> {
  if (positionals.length > 1 || (positionals[0] !== undefined && positionals[0] !== 'json')) {
    err(
      `tools-runner tail: unexpected argument ${JSON.stringify(positionals.find((p) => p !== 'json'))} (usage: tools-runner tail [json])`,
    );
    return EXIT.Usage;
  }
  const host = config.adminHost.includes(':') ? `[${config.adminHost}]` : config.adminHost;
  const url = `ws://${host}:${config.adminPort}/live`;
  const raw = positionals[0] === 'json';
  return new Promise<number>((resolve) => {
    const ws = new WebSocket(
      url,
      config.adminToken !== undefined ? { headers: { authorization: `Bearer ${config.adminToken}` } } : {},
    );
    const onAbort = (): void => ws.close();
    signal.addEventListener('abort', onAbort, { once: true });
    // Progress, not data: a log line (shown with --log-level debug), so stdout carries only the feed.
    ws.on('open', () => logger.info('tailing', { url }));
    ws.on('message', (data) => {
      const text = data.toString();
      out(raw ? safeField(text) : renderLiveMessage(text));
    });
    ws.on('error', (error) =>
      err(
        `tools-runner tail: ${url}: ${error.message} (is "tools-runner start" running with --admin-port ${config.adminPort}?)`,
      ),
    );
    ws.on('close', () => {
      signal.removeEventListener('abort', onAbort);
      resolve(signal.aborted ? EXIT.Ok : EXIT.Failed);
    });
  });
}
