// The installable CLI's own surface (issue 19): --version, help with defaults wrapped to 80 columns
// when stdout is not a terminal, output that survives a reader closing the pipe, and `npm start`'s
// staleness check (it builds only when a source file is newer than dist/).

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { helpWidth, wrapLine } from '../../src/cli/help.js';
import { cleanupAll, runCli, tempDir } from '../e2e/harness.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

async function run(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const cli = runCli(args);
  const code = await cli.exited;
  return { code, out: cli.stdout.join('\n'), err: cli.stderr.join('') };
}

afterAll(cleanupAll);

describe('version and help', () => {
  it.each([['--version'], ['-v']])('%s prints "tools-runner <version>", exit 0', async (flag) => {
    expect(await run([flag])).toEqual({ code: 0, out: `tools-runner ${version}`, err: '' });
  });

  it('help shows every option with its default, no line over 80 columns when stdout is not a terminal', async () => {
    const { code, out } = await run(['help']);
    expect(code).toBe(0);
    const lines = out.split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(lines[0]).toBe(`tools-runner ${version}`);
    expect(out).toMatch(/--data-dir +TOOLS_RUNNER_DATA_DIR\n/);
    expect(out).toMatch(/\(default:\s+\$XDG_DATA_HOME\/tools-runner,\s+else\s+~\/\.local\/share\/tools-runner\)/);
    expect(out).toContain('(default: 8082)');
    expect(out).toMatch(/\(default:\s+the bootstrap-breadcrumbs\/ directory of the installation\)/);
    const call = await run(['call', '--help']);
    expect(call.out).toContain('(default: 60000)');
    for (const line of call.out.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
  });

  it('wraps to the terminal width on a TTY, else 80 columns', () => {
    expect(helpWidth({ isTTY: true, columns: 120 })).toBe(120);
    expect(helpWidth({ isTTY: false, columns: 120 })).toBe(80);
    expect(helpWidth({})).toBe(80);
    expect(helpWidth({ isTTY: true, columns: 12 })).toBe(80);
  });

  it('wraps at spaces with a hanging indent and never splits a word longer than the line', () => {
    expect(wrapLine('  short', 80)).toEqual(['  short']);
    expect(wrapLine('  aaa bbb ccc ddd eee fff', 16)).toEqual(['  aaa bbb ccc', '      ddd eee', '      fff']);
    expect(wrapLine(`x ${'y'.repeat(30)} z`, 10)).toEqual(['x', `    ${'y'.repeat(30)}`, '    z']);
    expect(wrapLine('  0    one two three', 16)).toEqual(['  0    one two', '       three']);
  });

  it.each([['help'], ['--version'], ['config']])(
    '%s into a pipe its reader already closed ends quietly, exit 0 (no EPIPE crash)',
    async (...args) => {
      // `tools-runner help | true`: the reader is gone before the first write.
      const child = spawn(
        'bash',
        ['-c', `"${process.execPath}" dist/cli/main.js ${args.join(' ')} | true; exit \${PIPESTATUS[0]}`],
        { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise((resolve) => child.on('exit', resolve));
      expect(stderr).toBe('');
      expect(code).toBe(0);
    },
  );
});

describe('npm start builds only when dist/ is stale', () => {
  it('staleSource: undefined when every compiled file is newer, else the first newer source', async () => {
    const { staleSource } = (await import(join(root, 'scripts', 'ensure-built.mjs'))) as {
      staleSource(root: string): string | undefined;
    };
    const dir = tempDir('tr-stale-');
    for (const sub of ['src/cli', 'dist/cli', 'console/src', 'dist/console/public/assets'])
      mkdirSync(join(dir, sub), { recursive: true });
    const old = new Date(Date.now() - 60_000);
    for (const file of ['src/cli/main.ts', 'console/src/main.ts']) {
      writeFileSync(join(dir, file), '');
      utimesSync(join(dir, file), old, old);
    }
    writeFileSync(join(dir, 'dist/cli/main.js'), '');
    writeFileSync(join(dir, 'dist/console/public/assets/main.js'), '');
    expect(staleSource(dir)).toBeUndefined();
    utimesSync(join(dir, 'src/cli/main.ts'), new Date(), new Date(Date.now() + 60_000));
    expect(staleSource(dir)).toBe(join(dir, 'src/cli/main.ts'));
    writeFileSync(join(dir, 'src/cli/new.ts'), '');
    utimesSync(join(dir, 'src/cli/main.ts'), old, old);
    expect(staleSource(dir)).toBe(join(dir, 'src/cli/new.ts'));
  });

  it('package.json: start runs the staleness check, then the built CLI (no unconditional build)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      name: string;
      bin: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['start']).toBe('node scripts/ensure-built.mjs && node dist/cli/main.js start');
    expect(pkg.name).toBe('@tools-runner/tools-runner');
    expect(pkg.bin).toEqual({ 'tools-runner': 'dist/cli/main.js' });
  });
});
