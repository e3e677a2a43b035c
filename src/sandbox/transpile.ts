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
  /**
   * The same tool as a module factory (see toolFactory), when it can be one: a process compiles it once
   * and calls it per call instead of importing a new module instance per call.
   */
  factory?: ToolFactory;
}

/** A tool module turned into `export default function (module, exports, __export, __toCommonJS) { <its body as CommonJS> }`. */
export interface ToolFactory {
  /** Digest of the factory code: the harness keeps the factory it compiled under it. */
  id: string;
  /** The factory's module text (the harness compiles it as a script: sandbox/harness.ts compileFactory). */
  code: string;
  mapPosition?: CompiledTool['mapPosition'];
}

const FACTORY_PREFIX = 'export default function (module, exports, __export, __toCommonJS) {';
/** Where esbuild's CommonJS output leaves its helpers for the tool's own code, and how it exports. */
const FACTORY_EXPORTS = 'var tool_exports = {};\n__export(tool_exports, {';
const FACTORY_EXPORTED = '\nmodule.exports = __toCommonJS(tool_exports);\n';
const ESBUILD_HELPERS: ReadonlySet<string> = new Set([
  '__defProp',
  '__getOwnPropDesc',
  '__getOwnPropNames',
  '__hasOwnProp',
  '__export',
  '__copyProps',
  '__toCommonJS',
]);

/** Transpiles and caches tool sources by content digest. */
export interface ToolCompiler {
  /** The cached (or freshly transpiled) module text of `source`. */
  compile(source: string): CompiledTool;
  /** Whether esbuild is available (false: every tool is sent as TypeScript). */
  readonly transpiles: boolean;
}

type Transform = (
  code: string,
  options: Record<string, unknown>,
) => { code: string; map?: string; warnings?: unknown[] };

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

/**
 * The factory form of a tool (a per-process module factory, issue 24): esbuild turns the module into
 * CommonJS, wrapped in a function the harness calls once per call. Each call runs the module body in a
 * new function scope, so module-level state starts over every call exactly as with a new module
 * instance, while the process compiles the code once instead of importing (URL and base64 decoding,
 * Deno's dependency scan, V8 compile) once per call. Only for a self-contained module: none when the
 * tool imports anything (`require(` in the output), uses top-level await (esbuild refuses) or
 * `import.meta` (a warning): those keep the import per call.
 */
function toolFactory(transformSync: Transform, source: string): ToolFactory | undefined {
  let out: { code: string; map?: string; warnings?: unknown[] };
  try {
    out = transformSync(source, {
      loader: 'ts',
      format: 'cjs',
      target: 'esnext',
      sourcemap: 'external',
      sourcesContent: false,
      sourcefile: 'tool.ts',
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
      logLevel: 'silent',
    });
  } catch {
    return undefined;
  }
  if ((out.warnings?.length ?? 0) > 0 || out.code.includes('require(') || typeof out.map !== 'string' || out.map === '')
    return undefined;
  // esbuild's helpers read globals (Object.defineProperty, Function.prototype.call, descriptor literals)
  // that an earlier call of the same tool may have patched: they are blanked out (line numbers kept)
  // and the harness passes its own `__export` and `__toCommonJS`, built from primitives it captured.
  const body = out.code.indexOf(FACTORY_EXPORTS);
  if (body === -1 || !out.code.includes(FACTORY_EXPORTED)) return undefined;
  const helpers = out.code.slice(0, body);
  const names = [...helpers.matchAll(/^var (\w+) = /gm)].map((m) => m[1]);
  if (names.some((name) => !ESBUILD_HELPERS.has(name as string)) || !helpers.startsWith('var __')) return undefined;
  const code = `${FACTORY_PREFIX}${'\n'.repeat(helpers.split('\n').length - 1)}${out.code.slice(body)}\n}\n`;
  const inner = positionMapper(out.map);
  return {
    id: createHash('sha256').update(code).digest('hex').slice(0, 32),
    code,
    // the wrapper shares the first line: columns there are shifted by its length
    mapPosition: (line, column) => inner?.(line, line === 1 ? column - FACTORY_PREFIX.length : column),
  };
}

/** Loads esbuild when installed; `undefined` otherwise. */
async function loadTransform(): Promise<Transform | undefined> {
  try {
    const esbuild = (await import('esbuild')) as unknown as {
      transformSync?: Transform;
      default?: { transformSync?: Transform };
    };
    return esbuild.transformSync ?? esbuild.default?.transformSync;
  } catch {
    return undefined;
  }
}

/**
 * The harness's TypeScript as JavaScript (types stripped by esbuild); undefined without esbuild or on a
 * parse error. Minified, identifiers too (every boot reads, scans and compiles it: 23 -> 12 KB, ~0.6 ms
 * of CPU per boot); the harness names what tool code can see (`fetch.name`, `context.log.name`) itself.
 */
export async function transpileHarness(source: string): Promise<string | undefined> {
  const transformSync = await loadTransform();
  try {
    return transformSync?.(source, {
      loader: 'ts',
      format: 'esm',
      sourcefile: 'harness.ts',
      minify: true,
    }).code;
  } catch {
    return undefined;
  }
}

/** Creates a compiler; `transform` overrides esbuild (null: none, every tool is sent as TypeScript). */
export async function createToolCompiler(transform?: Transform | null): Promise<ToolCompiler> {
  const transformSync = transform === null ? undefined : (transform ?? (await loadTransform()));
  const cache = new Map<string, CompiledTool>();
  const asTypeScript = (source: string): CompiledTool => ({
    source64: Buffer.from(source, 'utf8').toString('base64'),
    lang: 'ts',
  });
  return {
    transpiles: transformSync !== undefined,
    compile(source) {
      // keyed by the source text itself: no digest of the source on every call
      const digest = source;
      const hit = cache.get(digest);
      if (hit) {
        if (cache.size > 1) {
          cache.delete(digest);
          cache.set(digest, hit);
        }
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
          const factory = toolFactory(transformSync, source);
          compiled =
            typeof out.map === 'string' && out.map !== ''
              ? {
                  source64: Buffer.from(out.code, 'utf8').toString('base64'),
                  lang: 'js',
                  mapPosition: positionMapper(out.map),
                  ...(factory ? { factory } : {}),
                }
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
