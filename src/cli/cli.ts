// tools-runner CLI: `tools-runner <command> [--flags] [args]` (entry: main.ts). The only module that
// calls process.exit.
// It loads only the configuration and the chosen command's code (commands are imported on demand),
// and everything it prints goes through the terminal-safety escaping of ./sanitize.js.

import { closeSync, openSync } from 'node:fs';
import { isatty } from 'node:tty';
import { loadConfig, type Config } from '../config/index.js';
import { coerceError } from '../errors.js';
import { createLogger, guardedWriter, type LogLevel } from '../logger.js';
import { EXIT, type Command } from './command.js';
import { COMMANDS } from './commands/index.js';
import { commandHelpLines, helpLines, helpWidth, packageVersion, printWrapped } from './help.js';
import { safeText } from './sanitize.js';

/** `--help`/`-h` among the arguments (before a `--`). */
function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

const LEVEL_ORDER: LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** Client commands log only warn and above unless asked for debug: stdout carries the answer, stderr problems. */
function logLevelFor(command: Command, config: Config): LogLevel {
  if (!command.client || config.logLevel === 'debug') return config.logLevel;
  return LEVEL_ORDER.indexOf(config.logLevel) < LEVEL_ORDER.indexOf('warn') ? 'warn' : config.logLevel;
}

/** The stdio descriptors on a terminal at start (after a hang-up, isatty() is false). */
const onTerminal = [0, 1, 2].filter((fd) => isatty(fd));

/**
 * The terminal hung up (SIGHUP): its stdio descriptors now point at /dev/null. Output goes nowhere anyway,
 * and Node 20 aborts at exit (134) when it cannot restore a hung-up terminal's mode (tcsetattr: EIO).
 */
function detachFromTerminal(): void {
  for (const fd of onTerminal) {
    try {
      closeSync(fd);
      openSync('/dev/null', fd === 0 ? 'r' : 'w'); // the lowest free descriptor: `fd` again
    } catch {
      // nothing to do: the descriptor stays as it was
    }
  }
}

async function main(argv: string[]): Promise<number> {
  // EPIPE-safe: when the reader goes away (`| head`), output is dropped, never an uncaught error.
  const stdout = guardedWriter(process.stdout);
  const stderr = guardedWriter(process.stderr);
  const out = (line: string): void => void stdout.write(safeText(line) + '\n');
  const err = (line: string): void => void stderr.write(safeText(line) + '\n');
  const width = helpWidth(process.stdout);
  const help = (): void => printWrapped(helpLines(packageVersion()), width, out);
  const commandHelp = (command: Command): void => printWrapped(commandHelpLines(command), width, out);
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    help();
    return name === undefined ? EXIT.Usage : EXIT.Ok;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    out(`tools-runner ${packageVersion()}`);
    return EXIT.Ok;
  }
  if (name === 'help') {
    const target = rest[0] === undefined ? undefined : COMMANDS.find((c) => c.name === rest[0]);
    if (rest[0] !== undefined && !target) {
      err(`tools-runner help: unknown command "${rest[0]}" (known: ${COMMANDS.map((c) => c.name).join(', ')})`);
      return EXIT.Usage;
    }
    if (target) commandHelp(target);
    else help();
    return EXIT.Ok;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    err(
      `tools-runner: unknown command "${name}" (known: ${COMMANDS.map((c) => c.name).join(', ')}; tools-runner help)`,
    );
    return EXIT.Usage;
  }
  if (wantsHelp(rest)) {
    commandHelp(command);
    return EXIT.Ok;
  }
  let loaded;
  try {
    loaded = loadConfig({ argv: rest });
  } catch (error) {
    err(`tools-runner ${name}: ${coerceError(error).message}`);
    return EXIT.Usage;
  }
  const { config } = loaded;
  const format = config.logFormat === 'auto' ? (process.stderr.isTTY ? 'text' : 'json') : config.logFormat;
  const logger = createLogger({ level: logLevelFor(command, config), format }).child({ cmd: name });
  const controller = new AbortController();
  const force = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signal === 'SIGHUP') detachFromTerminal();
    signals += 1;
    if (signals === 1) {
      logger.info('signal received, draining', { signal });
      controller.abort(new Error(`received ${signal}`));
    } else if (command.secondSignal && signals === 2) {
      force.abort(new Error(`received ${signal} again`));
      setTimeout(() => process.exit(EXIT.Interrupted), 5_000).unref();
    } else {
      logger.warn('second signal, exiting now', { signal });
      process.exit(EXIT.Interrupted);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('SIGHUP', onSignal);
  try {
    const run = await command.load();
    return await run({
      config,
      positionals: loaded.positionals,
      logger,
      out,
      err,
      signal: controller.signal,
      force: force.signal,
    });
  } catch (error) {
    const e = coerceError(error);
    err(`tools-runner ${name}: ${e.code}: ${e.message}`);
    return EXIT.Failed;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', onSignal);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Commands close their handles; exit anyway so a stray timer cannot keep a finished CLI alive.
    setTimeout(() => process.exit(code), 50).unref();
  },
  (error: unknown) => {
    guardedWriter(process.stderr).write(safeText(`tools-runner: ${String(error)}`) + '\n');
    process.exit(EXIT.Failed);
  },
);
