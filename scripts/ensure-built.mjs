// `npm start` runs this first: it compiles src/ to dist/ (and the web console) only when dist/ is
// missing or older than a source file, so a start with a current dist/ costs a directory walk, not a
// TypeScript compile. `node scripts/ensure-built.mjs`; exits non-zero when the build fails.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const defaultRoot = fileURLToPath(new URL('..', import.meta.url));

function files(dir, keep) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return files(path, keep);
    return keep(entry.name) ? [path] : [];
  });
}

const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs;

/** The first source file whose compiled counterpart is missing or older, or undefined when dist/ is current. */
export function staleSource(root = defaultRoot) {
  for (const file of files(join(root, 'src'), (name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))) {
    const built = mtime(join(root, 'dist', relative(join(root, 'src'), file)).replace(/\.ts$/, '.js'));
    if (built === undefined || built < mtime(file)) return file;
  }
  const bundle = mtime(join(root, 'dist', 'console', 'public', 'assets', 'main.js'));
  for (const file of files(join(root, 'console', 'src'), () => true)) {
    if (bundle === undefined || bundle < mtime(file)) return file;
  }
  return undefined;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const stale = staleSource();
  if (stale !== undefined) {
    console.error(`tools-runner: ${relative(defaultRoot, stale)} is newer than dist/: building`);
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: defaultRoot, stdio: 'inherit' });
  }
}
