// The shape of a CLI subcommand. Commands return an exit code; only main.ts calls process.exit.

import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';

export interface CommandContext {
  config: Config;
  /** Non-flag arguments after the subcommand name. */
  positionals: string[];
  logger: Logger;
  /** Human-facing output (results, `store listening on ...`). */
  out: (line: string) => void;
  /** Human-facing errors. */
  err: (line: string) => void;
  /** Aborted on the first SIGTERM/SIGINT: a long-running command starts draining. */
  signal: AbortSignal;
}

export interface Command {
  name: string;
  /** One line for `tools-runner help`. */
  summary: string;
  /** Usage line, e.g. `tools-runner store [--host H] [--port P] [--data-dir D]`. */
  usage: string;
  run(ctx: CommandContext): Promise<number>;
}
