// The service's last line of defence: an error that escaped every handler is counted and logged, and
// the service keeps serving. The guard cannot feed itself: an error raised while it handles one (a
// log sink that fails and reports it, say) is counted but not logged, and it logs at most
// MAX_LINES_PER_WINDOW lines per WINDOW_MS (the counter sees every error; the next window's first
// line says how many went unlogged), so a storm of errors cannot become a storm of log writes.

import type { Logger } from '../logger.js';

const MAX_LINES_PER_WINDOW = 10;
const WINDOW_MS = 10_000;

export interface UncaughtGuard {
  /** The handler for `uncaughtException` / `unhandledRejection`; never throws. */
  handle(error: unknown): void;
  /** Installs `handle` on the process; returns the uninstaller. */
  install(): () => void;
}

/** Creates the guard (see the module comment); `count` is called for every error. */
export function createUncaughtGuard(options: { logger: Logger; count(): void; now?: () => number }): UncaughtGuard {
  const now = options.now ?? Date.now;
  let handling = false;
  let windowStart = -Infinity;
  let logged = 0;
  let unlogged = 0;
  const handle = (error: unknown): void => {
    try {
      options.count();
    } catch {
      // counting must not make the guard throw
    }
    if (handling) return;
    handling = true;
    try {
      const at = now();
      if (at - windowStart >= WINDOW_MS) {
        if (unlogged > 0)
          options.logger.error('uncaught errors not logged (too many)', { count: unlogged, windowMs: WINDOW_MS });
        windowStart = at;
        logged = 0;
        unlogged = 0;
      }
      if (logged < MAX_LINES_PER_WINDOW) {
        logged += 1;
        options.logger.error('uncaught error; the service keeps serving', { error });
      } else {
        unlogged += 1;
      }
    } catch {
      // The logger does not throw; if it ever did, an exception here would end the process.
    } finally {
      handling = false;
    }
  };
  return {
    handle,
    install() {
      process.on('uncaughtException', handle);
      process.on('unhandledRejection', handle);
      return () => {
        process.off('uncaughtException', handle);
        process.off('unhandledRejection', handle);
      };
    },
  };
}
