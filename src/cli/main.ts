#!/usr/bin/env node
// tools-runner CLI: `tools-runner <command> [--flags] [args]`. The only module that calls process.exit.

import { loadConfig, OPTIONS, envName, flagName, type OptionKey } from '../config/index.js';
import { coerceError } from '../errors.js';
import { createLogger } from '../logger.js';
import type { Command } from './command.js';
import { bootstrapCommand } from './commands/bootstrap.js';
import { callCommand } from './commands/call.js';
import { configCommand } from './commands/config.js';
import { exportCommand } from './commands/export.js';
import { mcpCommand } from './commands/mcp.js';
import { startCommand } from './commands/start.js';
import { storeCommand } from './commands/store.js';
import { tailCommand } from './commands/tail.js';
import { testCommand } from './commands/test.js';

const COMMANDS: Command[] = [startCommand, storeCommand, callCommand, tailCommand, testCommand, bootstrapCommand, exportCommand, mcpCommand, configCommand];

function help(out: (line: string) => void): void {
  out('usage: tools-runner <command> [options] [args]');
  out('');
  out('commands:');
  for (const command of COMMANDS) out(`  ${command.name.padEnd(10)} ${command.summary}`);
  out('');
  out('options (every flag also reads its environment variable):');
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    out(`  --${flagName(key).padEnd(26)} ${envName(key).padEnd(40)} ${OPTIONS[key].meta.doc}`);
  }
}

async function main(argv: string[]): Promise<number> {
  const out = (line: string): void => void process.stdout.write(line + '\n');
  const err = (line: string): void => void process.stderr.write(line + '\n');
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    help(out);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    err(`tools-runner: unknown command "${name}" (known: ${COMMANDS.map((c) => c.name).join(', ')})`);
    return 2;
  }
  let loaded;
  try {
    loaded = loadConfig({ argv: rest });
  } catch (error) {
    err(`tools-runner ${name}: ${coerceError(error).message}`);
    return 2;
  }
  const logger = createLogger({ level: loaded.config.logLevel }).child({ cmd: name });
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      logger.info('signal received, draining', { signal });
      controller.abort(new Error(`received ${signal}`));
    } else {
      logger.warn('second signal, exiting now', { signal });
      process.exit(130);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    return await command.run({ config: loaded.config, positionals: loaded.positionals, logger, out, err, signal: controller.signal });
  } catch (error) {
    const e = coerceError(error);
    err(`tools-runner ${name}: ${e.code}: ${e.message}`);
    return 1;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Commands close their handles; exit anyway so a stray timer cannot keep a finished CLI alive.
    setTimeout(() => process.exit(code), 50).unref();
  },
  (error: unknown) => {
    process.stderr.write(`tools-runner: ${String(error)}\n`);
    process.exit(1);
  },
);
