// What `tools-runner help`, `<command> --help` and `--version` print: usage, commands, exit codes and
// every option with its environment variable and default, wrapped to the terminal's width (80 columns
// when stdout is not a terminal), continuation lines indented under their first line.

import { readFileSync } from 'node:fs';
import { OPTIONS, envName, flagName, optionDefault, type OptionKey } from '../config/index.js';
import { EXIT, type Command } from './command.js';
import { COMMANDS } from './commands/index.js';

const EXIT_TABLE: Array<[number, string]> = [
  [EXIT.Ok, 'success'],
  [
    EXIT.Failed,
    'the command ran and the outcome is a failure (error response, rejected file, failed example, a tool the service did not load)',
  ],
  [
    EXIT.Usage,
    'bad usage: unknown command or option, invalid value, bad JSON input, no runner key for a client command',
  ],
  [EXIT.Timeout, '`call`: no response within --call-timeout-ms'],
  [EXIT.Unavailable, 'a client command could not reach the store, or the store refused its credentials'],
  [
    EXIT.Interrupted,
    'interrupted: `call` stopped by SIGTERM or a second SIGINT, or a second signal made `start` exit without draining',
  ],
];

/** The version of this installation (package.json two levels above src/cli/ and dist/cli/). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** Splits `line` into lines of at most `width` columns at spaces; continuations are indented (see below). */
export function wrapLine(line: string, width: number, hang = 4): string[] {
  if (line.length <= width) return [line];
  // A two-column line (`  name      text`) continues under its text; an indented paragraph under its
  // indent; anything else `hang` columns in.
  const column = /^ *\S+ {2,}/.exec(line)?.[0].length;
  const lead = /^ */.exec(line)?.[0].length ?? 0;
  const indent = ' '.repeat(Math.min(column ?? (lead >= hang ? lead : lead + hang), Math.floor(width / 2)));
  const out: string[] = [];
  let rest = line;
  let prefix = '';
  while ((prefix + rest).length > width) {
    const room = width - prefix.length;
    let cut = rest.lastIndexOf(' ', room);
    // A word longer than the line stays whole (a URL, a path) rather than being split.
    if (cut <= 0) cut = rest.indexOf(' ', room);
    if (cut <= 0) break;
    out.push(prefix + rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut + 1).trimStart();
    prefix = indent;
  }
  out.push(prefix + rest);
  return out;
}

/** The width help is wrapped to: the terminal's columns, else 80. */
export function helpWidth(stream: { isTTY?: boolean; columns?: number }): number {
  return stream.isTTY && typeof stream.columns === 'number' && stream.columns >= 40 ? stream.columns : 80;
}

const optionLines = (key: OptionKey): string[] => {
  const flag = `--${flagName(key)}`;
  const fallback = optionDefault(key).replace(/`/g, '');
  return [
    `  ${flag.padEnd(28)} ${envName(key)}`,
    `      ${OPTIONS[key].meta.doc.replace(/`/g, '')} (default: ${fallback === '—' ? 'none' : fallback})`,
  ];
};

/** The lines of `tools-runner help`. */
export function helpLines(version: string): string[] {
  const lines = [
    `tools-runner ${version}`,
    '',
    "usage: tools-runner <command> [options] [args]    (tools-runner <command> --help: that command's help)",
    '',
    'commands:',
  ];
  for (const command of COMMANDS) lines.push(`  ${command.name.padEnd(10)} ${command.summary}`);
  lines.push('  --version  print the version (also -v)', '', 'exit codes:');
  for (const [code, meaning] of EXIT_TABLE) lines.push(`  ${String(code).padEnd(4)} ${meaning}`);
  lines.push('', 'options (every flag also reads its environment variable):');
  for (const key of Object.keys(OPTIONS) as OptionKey[]) lines.push(...optionLines(key));
  return lines;
}

/** The lines of `tools-runner <command> --help`. */
export function commandHelpLines(command: Command): string[] {
  const lines = [`usage: ${command.usage}`, '', ...command.description, '', 'exit codes:'];
  for (const [code, meaning] of command.exits) lines.push(`  ${String(code).padEnd(4)} ${meaning}`);
  const options: OptionKey[] = [...command.options, 'logLevel'].filter(
    (key, i, all) => all.indexOf(key) === i,
  ) as OptionKey[];
  lines.push(
    '',
    'options (also read from their environment variables; every option of `tools-runner help` is accepted):',
  );
  for (const key of options) lines.push(...optionLines(key));
  return lines;
}

/** Writes `lines` through `out`, each wrapped to `width`. */
export function printWrapped(lines: readonly string[], width: number, out: (line: string) => void): void {
  for (const line of lines) for (const part of wrapLine(line, width)) out(part);
}
