// Builds the web console (console/) into dist/console/public with esbuild: one ES module entry,
// lazily loaded chunks per page (CodeMirror and uPlot only where used), minified, no source maps
// shipped, nothing fetched from a network at run time. `node scripts/build-console.mjs`.

import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'console', 'public');

/** Builds the console; resolves with esbuild's metafile summary. */
export async function buildConsole() {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'assets'), { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['console/src/main.ts'],
    outdir: join(out, 'assets'),
    entryNames: '[name]',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    minify: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  // Preload the chunks main.js imports statically, so they load alongside it, not after it.
  const main = Object.entries(result.metafile.outputs).find(([file]) => file.endsWith('/assets/main.js'))?.[1];
  const preloads = (main?.imports ?? [])
    .filter((imp) => imp.kind === 'import-statement')
    .map((imp) => `<link rel="modulepreload" href="/assets/${imp.path.replace(/^.*\/assets\//, '')}">`)
    .join('\n');
  const html = readFileSync(join(root, 'console', 'index.html'), 'utf8').replace('<!-- preloads -->', preloads);
  writeFileSync(join(out, 'index.html'), html);
  const bytes = Object.fromEntries(
    Object.entries(result.metafile.outputs).map(([file, info]) => [file.replace(/^.*public\//, ''), info.bytes]),
  );
  return { out, bytes };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { bytes } = await buildConsole();
  const total = Object.values(bytes).reduce((a, b) => a + b, 0);
  process.stdout.write(`console built: ${Object.keys(bytes).length} files, ${Math.round(total / 1024)} KiB\n`);
}
