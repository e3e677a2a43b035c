// Reads the fenced blocks of README.md and docs/*.md with their `<!-- readme-example: ID [skip: REASON] -->` markers
// (the marker is the line right above the opening fence), and runs shell lines the way a reader
// would: `sh -c` in a given directory, with `npx tools-runner` meaning this checkout's built CLI.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const cli = join(root, 'dist', 'cli', 'main.js');

export interface Block {
  /** The marker's id; undefined when the block has no marker. */
  id?: string;
  /** The marker's skip reason. */
  skip?: string;
  lang: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The file it stands in, relative to the checkout (README.md or docs/X.md). */
  file: string;
}

const MARKER = /^<!-- readme-example: ([a-z0-9-]+)(?: skip: (.+?))? -->$/;

/** Every fenced block of `text`, in order. */
export function readmeBlocks(text: string, file = 'README.md'): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const end = lines.indexOf('```', i + 1);
    if (end === -1) throw new Error(`${file} line ${i + 1}: fence never closed`);
    const marker = MARKER.exec(lines[i - 1] ?? '');
    blocks.push({
      ...(marker ? { id: marker[1] } : {}),
      ...(marker?.[2] ? { skip: marker[2] } : {}),
      lang: open[1] ?? '',
      body: lines.slice(i + 1, end).join('\n'),
      line: i + 1,
      file,
    });
    i = end;
  }
  return blocks;
}

/** The documents whose blocks are examples: the README, then docs/*.md in name order. */
export function documents(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort();
  return ['README.md', ...docs.map((name) => `docs/${name}`)];
}

/** The blocks of the README and docs/ by id (throws for an unknown id, so a renamed marker fails loudly). */
export function readme(): { blocks: Block[]; byId(id: string): Block } {
  const blocks = documents().flatMap((file) => readmeBlocks(readFileSync(join(root, file), 'utf8'), file));
  return {
    blocks,
    byId(id) {
      const block = blocks.find((b) => b.id === id);
      if (!block) throw new Error(`README.md and docs/*.md have no block marked readme-example: ${id}`);
      return block;
    },
  };
}

/** The command lines of a shell block (comment-only and blank lines dropped). */
export function commandLines(block: Block): string[] {
  return block.body.split('\n').filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
}

export interface ShellRun {
  stdout: string;
  stderr: string;
  code: number | null;
}

/** A README command as the shell would run it; `npx tools-runner` is this checkout's dist/ CLI. */
export function asCommand(line: string): string {
  return line.replace(/\bnpx tools-runner\b/g, `${JSON.stringify(process.execPath)} ${JSON.stringify(cli)}`);
}

/** Starts `sh -c line`; `done` resolves at exit. `stop()` ends it (SIGTERM to the shell's process group). */
export function startShell(
  line: string,
  options: { cwd: string; env: Record<string, string> },
): { done: Promise<ShellRun>; output(): string; errors(): string; stop(): void } {
  // A single command replaces the shell (exec), so its own exit code is what `done` reports.
  const script = /[|&;]/.test(line) ? asCommand(line) : `exec ${asCommand(line)}`;
  const child = spawn('sh', ['-c', script], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<ShellRun>((resolve) => child.on('close', (code) => resolve({ stdout, stderr, code })));
  return {
    done,
    output: () => stdout,
    errors: () => stderr,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
        process.kill(-child.pid, 'SIGTERM');
    },
  };
}

/** Runs one README line to its end. */
export function shell(line: string, options: { cwd: string; env: Record<string, string> }): Promise<ShellRun> {
  return startShell(line, options).done;
}
