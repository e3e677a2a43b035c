// Code caching: a tool's TypeScript is transpiled to JavaScript once per tool version on the host
// (esbuild, type stripping only), so no call pays for Deno's transpiler. The source map stays on the
// host (an inline one made every fresh module instance in a warm process several times dearer to
// load, growing with the instances loaded): `mapPosition` turns a line:column of the JavaScript back
// into the tool's own, and the host rewrites error stacks with it, so they still point at the
// tool's own lines and columns. Source that esbuild cannot parse is sent as TypeScript
// unchanged: Deno then reports the syntax error exactly as before. Without esbuild (a broken
// install) every tool is sent as TypeScript.

import { createHash } from 'node:crypto';

/** The module text a call sends to the harness: base64 of the code and its media type. */
export interface CompiledTool {
  source64: string;
  lang: 'js' | 'ts';
  /** JavaScript line:column (1-based) -> the tool source's; absent for TypeScript sent as is. */
  mapPosition?: (line: number, column: number) => { line: number; column: number } | undefined;
}

/** Transpiles and caches tool sources by content digest. */
export interface ToolCompiler {
  /** The cached (or freshly transpiled) module text of `source`. */
  compile(source: string): CompiledTool;
  /** Whether esbuild is available (false: every tool is sent as TypeScript). */
  readonly transpiles: boolean;
}

type Transform = (code: string, options: Record<string, unknown>) => { code: string; map?: string };

/** Most distinct tool versions kept; the least recently used is dropped beyond it. */
export const COMPILE_CACHE_SIZE = 512;

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUE = new Map([...BASE64].map((char, i) => [char, i]));

/** Per generated line: [generated column, source line, source column] triples (0-based), from a v3 map. */
function decodeMappings(mappings: string): number[][] {
  const lines: number[][] = [];
  let sourceLine = 0;
  let sourceColumn = 0;
  for (const group of mappings.split(';')) {
    const out: number[] = [];
    let column = 0;
    for (const segment of group.split(',')) {
      if (segment === '') continue;
      const fields: number[] = [];
      let value = 0;
      let shift = 0;
      for (const char of segment) {
        const digit = BASE64_VALUE.get(char);
        if (digit === undefined) return lines;
        value += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          fields.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      column += fields[0] ?? 0;
      if (fields.length < 4) continue;
      sourceLine += fields[2] as number;
      sourceColumn += fields[3] as number;
      out.push(column, sourceLine, sourceColumn);
    }
    lines.push(out);
  }
  return lines;
}

/** A position mapper over an esbuild source map (decoded on first use). */
function positionMapper(map: string): CompiledTool['mapPosition'] {
  let decoded: number[][] | undefined;
  return (line, column) => {
    try {
      decoded ??= decodeMappings((JSON.parse(map) as { mappings: string }).mappings);
    } catch {
      decoded = [];
    }
    const segments = decoded[line - 1];
    if (!segments || segments.length === 0) return undefined;
    let at = 0;
    for (let i = 0; i < segments.length; i += 3) if ((segments[i] as number) <= column - 1) at = i;
    return { line: (segments[at + 1] as number) + 1, column: (segments[at + 2] as number) + 1 };
  };
}

/** Loads esbuild when installed; `undefined` otherwise. */
async function loadTransform(): Promise<Transform | undefined> {
  try {
    const esbuild = (await import('esbuild')) as unknown as { transformSync?: Transform; default?: { transformSync?: Transform } };
    return esbuild.transformSync ?? esbuild.default?.transformSync;
  } catch {
    return undefined;
  }
}

/** The harness's TypeScript as JavaScript (types stripped by esbuild); undefined without esbuild or on a parse error. */
export async function transpileHarness(source: string): Promise<string | undefined> {
  const transformSync = await loadTransform();
  try {
    return transformSync?.(source, { loader: 'ts', format: 'esm', sourcefile: 'harness.ts' }).code;
  } catch {
    return undefined;
  }
}

/** Creates a compiler; `transform` overrides esbuild (null: none, every tool is sent as TypeScript). */
export async function createToolCompiler(transform?: Transform | null): Promise<ToolCompiler> {
  const transformSync = transform === null ? undefined : (transform ?? (await loadTransform()));
  const cache = new Map<string, CompiledTool>();
  const asTypeScript = (source: string): CompiledTool => ({ source64: Buffer.from(source, 'utf8').toString('base64'), lang: 'ts' });
  return {
    transpiles: transformSync !== undefined,
    compile(source) {
      const digest = createHash('sha256').update(source).digest('base64');
      const hit = cache.get(digest);
      if (hit) {
        cache.delete(digest);
        cache.set(digest, hit);
        return hit;
      }
      let compiled: CompiledTool;
      if (!transformSync) compiled = asTypeScript(source);
      else {
        try {
          const out = transformSync(source, {
            loader: 'ts',
            format: 'esm',
            target: 'esnext',
            sourcemap: 'external',
            sourcesContent: false,
            sourcefile: 'tool.ts',
            // like Deno: imports are kept as written (an unused import still loads, and is checked)
            tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
            logLevel: 'silent',
          });
          compiled =
            typeof out.map === 'string' && out.map !== ''
              ? { source64: Buffer.from(out.code, 'utf8').toString('base64'), lang: 'js', mapPosition: positionMapper(out.map) }
              : asTypeScript(source);
        } catch {
          compiled = asTypeScript(source);
        }
      }
      cache.set(digest, compiled);
      if (cache.size > COMPILE_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      return compiled;
    },
  };
}
