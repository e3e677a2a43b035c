// Code caching: a tool's TypeScript is transpiled to JavaScript once per tool version on the host
// (esbuild, type stripping only), so no call pays for Deno's transpiler. The JavaScript carries an
// inline source map (no sources content), which Deno applies to stacks, so error stacks still point
// at the tool's own lines and columns. Source that esbuild cannot parse is sent as TypeScript
// unchanged: Deno then reports the syntax error exactly as before. Without esbuild (a broken
// install) every tool is sent as TypeScript.

import { createHash } from 'node:crypto';

/** The module text a call sends to the harness: base64 of the code and its media type. */
export interface CompiledTool {
  source64: string;
  lang: 'js' | 'ts';
}

/** Transpiles and caches tool sources by content digest. */
export interface ToolCompiler {
  /** The cached (or freshly transpiled) module text of `source`. */
  compile(source: string): CompiledTool;
  /** Whether esbuild is available (false: every tool is sent as TypeScript). */
  readonly transpiles: boolean;
}

type Transform = (code: string, options: Record<string, unknown>) => { code: string };

/** Most distinct tool versions kept; the least recently used is dropped beyond it. */
export const COMPILE_CACHE_SIZE = 512;

const MAP_COMMENT = '//# sourceMappingURL=data:application/json;base64,';

/** Loads esbuild when installed; `undefined` otherwise. */
async function loadTransform(): Promise<Transform | undefined> {
  try {
    const esbuild = (await import('esbuild')) as unknown as { transformSync?: Transform; default?: { transformSync?: Transform } };
    return esbuild.transformSync ?? esbuild.default?.transformSync;
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
            sourcemap: 'inline',
            sourcesContent: false,
            sourcefile: 'tool.ts',
            // like Deno: imports are kept as written (an unused import still loads, and is checked)
            tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
            logLevel: 'silent',
          }).code;
          compiled = out.includes(MAP_COMMENT) ? { source64: Buffer.from(out, 'utf8').toString('base64'), lang: 'js' } : asTypeScript(source);
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
