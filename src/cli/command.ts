// The shape of a CLI subcommand. A command is described here without its code: main.ts imports a
// command's module only when that command runs, so `tools-runner call` never loads the store, the
// sandbox or the service. Commands return an exit code; only main.ts calls process.exit.

import type { Config, OptionKey } from '../config/index.js';
import type { Logger } from '../logger.js';

/** Exit codes shared by every command (docs/cli.md's "Exit codes" table lists them). */
export const EXIT = {
  /** Done: the command did what was asked (`call`: a success response). */
  Ok: 0,
  /** Done, but the outcome is a failure: an error response, a rejected file, a failed example. */
  Failed: 1,
  /** Bad usage: unknown command or option, invalid option value, missing or malformed argument. */
  Usage: 2,
  /** `call`: no response within --call-timeout-ms. */
  Timeout: 3,
  /** A client command could not reach the store, or the store refused the CLI's credentials. */
  Unavailable: 4,
  /** A second SIGINT/SIGTERM/SIGHUP: exited without draining. */
  Interrupted: 130,
} as const;

export interface CommandContext {
  config: Config;
  /** Non-flag arguments after the subcommand name. */
  positionals: string[];
  logger: Logger;
  /** What was asked for (results, `store listening on ...`); agent text already sanitised by the caller. */
  out: (line: string) => void;
  /** Problems, one line each. */
  err: (line: string) => void;
  /** Aborted on the first SIGTERM/SIGINT/SIGHUP: a long-running command starts draining. */
  signal: AbortSignal;
  /** Aborted on the second signal, for a command with `secondSignal` (others exit at once with 130). */
  force: AbortSignal;
}

/** The code of a command: its module exports `run`. */
export type CommandRun = (ctx: CommandContext) => Promise<number>;

export interface Command {
  name: string;
  /** One line for `tools-runner help`. */
  summary: string;
  /** Usage line, e.g. `tools-runner store [--host H] [--port P] [--data-dir D]`. */
  usage: string;
  /** Paragraph lines for `tools-runner <command> --help`. */
  description: string[];
  /** The options this command reads (shown by its --help; every option is accepted everywhere). */
  options: OptionKey[];
  /** Exit codes this command can return, with their meaning here. */
  exits: Array<[code: number, meaning: string]>;
  /** A client of a running store/runner: log lines below warn are dropped unless --log-level debug. */
  client: boolean;
  /** The command ends itself on a second signal (ctx.force), within 5 s; otherwise the CLI exits 130 at once. */
  secondSignal?: true;
  /** Imports the command's code. */
  load(): Promise<CommandRun>;
}
