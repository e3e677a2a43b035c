// `npm install` / `npm ci` in a checkout run this (the `prepare` script): it compiles src/ to dist/
// so that `npx tools-runner` works right after installing. It builds only when it can: without
// src/ (an image stage that copied only package*.json) or without TypeScript (`--omit=dev`) there is
// nothing to build here, and it says so instead of failing the install.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
if (!existsSync(`${root}src/cli/main.ts`)) process.exit(0);
let tsc;
try {
  tsc = createRequire(`${root}package.json`).resolve('typescript/bin/tsc');
} catch {
  console.error(
    'tools-runner prepare: TypeScript is not installed (--omit=dev?); dist/ not built — run "npm run build" after installing dev dependencies',
  );
  process.exit(0);
}
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
// The bin must be executable for `npx tools-runner` (npm sets the mode only for installed packages).
chmodSync(`${root}dist/cli/main.js`, 0o755);
// The web console's assets, when its bundler is installed (dev dependencies).
try {
  createRequire(`${root}package.json`).resolve('esbuild');
  execFileSync(process.execPath, [`${root}scripts/build-console.mjs`], { cwd: root, stdio: 'inherit' });
} catch (error) {
  if (error?.code !== 'MODULE_NOT_FOUND') throw error;
  console.error('tools-runner prepare: esbuild is not installed (--omit=dev?); the web console is not built');
}
