// The import direction between the folders of src/ (CONTRIBUTING.md, "Layout and import direction"):
// a folder imports only from its own layer or the layers below it. Every `from '...'` of every
// src/**/*.ts file is checked; the few upward imports of today are listed below, each with why.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const src = join(root, 'src');

/** Layers, lowest first. A top-level file of src/ (errors.ts) counts as a folder of its own name. */
const LAYERS: readonly (readonly string[])[] = [
  [
    'errors',
    'logger',
    'log-value',
    'result',
    'config',
    'local-transport',
    'process-group',
    'text',
    'http',
    'backoff',
    'bounded',
  ],
  ['breadcrumbs', 'store'],
  ['screen', 'contract', 'audit'],
  ['sandbox', 'host-tools', 'queue', 'tool-context'],
  ['catalog', 'rap', 'export'],
  ['request'],
  ['authoring', 'console', 'mcp', 'extension', 'autonomy'],
  ['service'],
  ['cli'],
];

/** Upward imports allowed today (importer -> imported, paths under src/), each with its reason. */
const EXCEPTIONS: ReadonlyMap<string, string> = new Map<string, string>([]);

const layerOf = new Map(LAYERS.flatMap((names, level) => names.map((name) => [name, level] as const)));

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The folder of src/ a path (relative to src/) belongs to. */
const folderOf = (rel: string): string => {
  const first = rel.split(sep)[0] as string;
  return first.endsWith('.ts') ? first.slice(0, -3) : first;
};

/** Relative imports (`from './x.js'`) of a source text, as written. */
function relativeImports(text: string): string[] {
  return [...text.matchAll(/\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1] as string);
}

function edges(): Array<{ from: string; to: string }> {
  return tsFiles(src).flatMap((file) =>
    relativeImports(readFileSync(file, 'utf8')).map((spec) => ({
      from: relative(src, file),
      to: relative(src, normalize(join(dirname(file), spec.replace(/\.js$/, '.ts')))),
    })),
  );
}

describe('import direction', () => {
  it('finds the imports it checks (a parser that sees nothing cannot fail)', () => {
    expect(
      relativeImports(`import { a } from './a.js';\nexport { b } from "../b/c.js";\nimport x from 'node:fs';`),
    ).toEqual(['./a.js', '../b/c.js']);
    expect(edges().length).toBeGreaterThan(300);
  });

  it('every folder of src/ has a layer', () => {
    const folders = new Set(tsFiles(src).map((file) => folderOf(relative(src, file))));
    expect([...folders].filter((folder) => !layerOf.has(folder))).toEqual([]);
  });

  it('no folder imports from a layer above its own, except the listed exceptions', () => {
    const upward = edges()
      .filter(({ from, to }) => (layerOf.get(folderOf(from)) ?? 0) < (layerOf.get(folderOf(to)) ?? 0))
      .map(({ from, to }) => `${from.split(sep).join('/')} -> ${to.split(sep).join('/')}`);
    expect(upward.filter((edge) => !EXCEPTIONS.has(edge))).toEqual([]);
    // An exception nobody needs any more is removed from the list.
    expect([...EXCEPTIONS.keys()].filter((edge) => !upward.includes(edge))).toEqual([]);
  });

  it('screen and sandbox import from breadcrumbs/ only the message shapes (never the store client)', () => {
    const bad = edges()
      .filter(
        ({ from, to }) =>
          ['screen', 'sandbox'].includes(folderOf(from)) &&
          folderOf(to) === 'breadcrumbs' &&
          to.split(sep).join('/') !== 'breadcrumbs/messages.ts',
      )
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(bad).toEqual([]);
  });

  it('the Deno harness (sandbox/) never imports from src/', () => {
    const harness = join(root, 'sandbox');
    const bad = tsFiles(harness).flatMap((file) =>
      relativeImports(readFileSync(file, 'utf8'))
        .filter((spec) => normalize(join(dirname(file), spec)).startsWith(src))
        .map((spec) => `${relative(root, file)} -> ${spec}`),
    );
    expect(bad).toEqual([]);
  });
});
