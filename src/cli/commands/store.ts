// `tools-runner store`: runs the embedded RCRT-compatible breadcrumb store on its own until
// SIGTERM/SIGINT. Prints exactly one stdout line, `store listening on http://HOST:PORT`, once the
// port accepts connections (so scripts and tests can wait for it); startup problems are one line
// on stderr and a non-zero exit.

import { coerceError } from '../../errors.js';
import { createStore } from '../../store/index.js';
import type { Command } from '../command.js';

/** The `store` subcommand. */
export const storeCommand: Command = {
  name: 'store',
  summary: 'run the embedded RCRT-compatible breadcrumb store (HTTP + SQLite)',
  usage: 'tools-runner store [--host H] [--port P] [--data-dir D] [--auth-secret S --admin-key K] [--secrets-key K]',
  async run({ config, positionals, logger, out, err, signal }) {
    if (positionals.length > 0) {
      err(`tools-runner store: unexpected argument ${JSON.stringify(positionals[0])} (usage: ${storeCommand.usage})`);
      return 2;
    }
    let store;
    try {
      store = await createStore({
        host: config.host,
        port: config.port,
        dataDir: config.dataDir,
        maxBodyBytes: config.maxBodyBytes,
        authSecret: config.authSecret,
        adminKey: config.adminKey,
        secretsKey: config.secretsKey,
        pingIntervalMs: config.pingIntervalMs,
        eventRetention: config.eventRetention,
        authMint: config.authMint,
        embedUrl: config.embedUrl,
        embedCommand: config.embedCommand,
        logger: logger.child({ component: 'store' }),
      });
    } catch (error) {
      err(`tools-runner store: ${coerceError(error).message}`);
      return 1;
    }
    out(`store listening on ${store.url}`);
    if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await store.close();
    return 0;
  },
};
