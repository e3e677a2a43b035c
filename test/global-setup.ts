// Vitest global setup: compiles src/ to dist/ once per run when dist/ is missing or older than
// any source file, for the tests that run the real CLI (`node dist/cli/main.js ...`).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function isFresh(): boolean {
  return sources(join(root, 'src')).every((file) => {
    const built = join(root, 'dist', relative(join(root, 'src'), file)).replace(/\.ts$/, '.js');
    const out = statSync(built, { throwIfNoEntry: false });
    return out !== undefined && out.mtimeMs >= statSync(file).mtimeMs;
  });
}

/**
 * Builds dist/ unless it is up to date; a failed build fails the run with tsc's output. Also points
 * XDG_DATA_HOME (the default --data-dir and audit dir) at a temp dir for the whole run, so no test
 * writes under the real home; the returned teardown removes it.
 */
export default function setup(): () => void {
  const dataHome = mkdtempSync(join(tmpdir(), 'tr-test-xdg-'));
  process.env['XDG_DATA_HOME'] = dataHome;
  const teardown = (): void => rmSync(dataHome, { recursive: true, force: true });
  if (isFresh()) return teardown;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? String(error);
    throw new Error(`test/global-setup: "tsc -p tsconfig.build.json" failed:\n${output}`);
  }
  return teardown;
}
