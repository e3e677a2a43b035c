// Issue 12: warm isolation (the default) and process isolation. A warm process serves calls of exactly
// one tool version, permission set, limits and secrets, one at a time, each call with a fresh module
// instance; it is retired after an error, a timeout, warmMaxCalls calls, or when idle. A tool that
// demands `process`, or `isolation: 'process'` for all, gives every call a fresh process. The
// global-state test pins down exactly what still carries over between calls of one warm process.

import { describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../src/result.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';
import { createToolCompiler } from '../../src/sandbox/transpile.js';
import { captureLogger, codeOf, job, testConfig, tool, useIsolatedSandboxes } from './helpers.js';

let sandbox: Sandbox | undefined;
useIsolatedSandboxes(
  () => sandbox,
  () => void (sandbox = undefined),
);

type Counter = { calls: number; pid: number };
function outputOf<T>(result: ExecutionResult): T {
  if (!result.ok) throw new Error(`call failed: ${result.error.code} ${result.error.message}`);
  return result.output as T;
}

async function counters(s: Sandbox, t: SandboxTool, n: number): Promise<Counter[]> {
  const out: Counter[] = [];
  for (let i = 0; i < n; i++) out.push(outputOf<Counter>(await s.run(job(t))));
  return out;
}

describe('warm isolation (default)', () => {
  it('consecutive calls share one process but never module state', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const calls = await counters(sandbox, tool('counter'), 4);
    expect(calls.map((c) => c.calls)).toEqual([1, 1, 1, 1]);
    expect(new Set(calls.map((c) => c.pid)).size).toBe(1);
  });

  it('a different version (or source) of the same tool never shares a process', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 2, poolMax: 8 }), logger: captureLogger().logger });
    const v1 = tool('counter');
    const v2 = tool('counter', { version: '1.0.1' });
    const sameVersionOtherSource = tool('counter', { source: `${v1.source}\n// edited` });
    const pids: Record<string, number[]> = { v1: [], v2: [], edited: [] };
    for (let i = 0; i < 3; i++) {
      pids.v1?.push(outputOf<Counter>(await sandbox.run(job(v1))).pid);
      pids.v2?.push(outputOf<Counter>(await sandbox.run(job(v2))).pid);
      pids.edited?.push(outputOf<Counter>(await sandbox.run(job(sameVersionOtherSource))).pid);
    }
    expect(new Set(pids.v1).size).toBe(1);
    expect(new Set(pids.v2).size).toBe(1);
    expect(new Set(pids.edited).size).toBe(1);
    expect(new Set([pids.v1?.[0], pids.v2?.[0], pids.edited?.[0]]).size).toBe(3);
  });

  it('other permissions or limits of the same version never share a process', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 1, poolMax: 16 }), logger: captureLogger().logger });
    const base = outputOf<Counter>(await sandbox.run(job(tool('counter')))).pid;
    const otherTimeout = outputOf<Counter>(await sandbox.run(job(tool('counter', { timeoutMs: 20_000 })))).pid;
    const otherMemory = outputOf<Counter>(await sandbox.run(job(tool('counter', { memoryMb: 96 })))).pid;
    const otherNet = outputOf<Counter>(await sandbox.run(job(tool('counter', { net: ['example.com'] })))).pid;
    const otherApi = outputOf<Counter>(await sandbox.run(job(tool('counter', { api: 'read' })))).pid;
    expect(new Set([base, otherTimeout, otherMemory, otherNet, otherApi]).size).toBe(5);
    expect(outputOf<Counter>(await sandbox.run(job(tool('counter')))).pid).toBe(base);
  });

  it('at poolMax, the process parked longest ago under another version gives up its room', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 1, poolMax: 2 }), logger: captureLogger().logger });
    const a = tool('counter', { name: 'a' });
    const b = tool('counter', { name: 'b' });
    const [a1, a2] = await counters(sandbox, a, 2);
    expect(a2?.pid).toBe(a1?.pid);
    const [b1, b2] = await counters(sandbox, b, 2);
    expect(b2?.pid).toBe(b1?.pid);
    const [a3] = await counters(sandbox, a, 1);
    expect(a3?.pid).not.toBe(a1?.pid);
  });

  it('a tool that demands process isolation gets a fresh process per call', async () => {
    sandbox = await createSandbox({ config: testConfig({ reuseTools: ['counter'] }), logger: captureLogger().logger });
    const calls = await counters(sandbox, tool('counter', { isolation: 'process' }), 3);
    expect(calls.map((c) => c.calls)).toEqual([1, 1, 1]);
    expect(new Set(calls.map((c) => c.pid)).size).toBe(3);
  });

  it('an error, of the tool or of the call, retires the process', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const source =
      'export async function execute(i) { if (i.fail) throw new Error("failed on purpose"); if (i.bad) return undefined; return { pid: Deno.pid }; }';
    const t = { ...tool('echo'), name: 'sometimes-fails', source };
    const first = outputOf<{ pid: number }>(await sandbox.run(job(t, {}))).pid;
    expect(outputOf<{ pid: number }>(await sandbox.run(job(t, {}))).pid).toBe(first);
    expect(await sandbox.run(job(t, { fail: true }))).toMatchObject({
      ok: false,
      error: { code: 'tool.error', message: 'failed on purpose' },
    });
    const second = outputOf<{ pid: number }>(await sandbox.run(job(t, {}))).pid;
    expect(second).not.toBe(first);
    expect(codeOf(await sandbox.run(job(t, { bad: true })))).toBe('output.invalid');
    expect(outputOf<{ pid: number }>(await sandbox.run(job(t, {}))).pid).not.toBe(second);
  });

  it('a process is retired after warmMaxCalls calls', async () => {
    sandbox = await createSandbox({ config: testConfig({ warmMaxCalls: 2 }), logger: captureLogger().logger });
    const pids = (await counters(sandbox, tool('counter'), 5)).map((c) => c.pid);
    expect(pids[1]).toBe(pids[0]);
    expect(pids[2]).not.toBe(pids[0]);
    expect(pids[3]).toBe(pids[2]);
    expect(pids[4]).not.toBe(pids[2]);
  });

  // What a call can still leave to the next call of the same tool version in the same warm process.
  it('documents the global state that carries over: globals, prototype patches, timers; not module state or storage', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const source = `
      let moduleState = 0;
      export async function execute(input) {
        moduleState++;
        const g = globalThis;
        if (input.wait) await new Promise((resolve) => setTimeout(resolve, 200));
        const seen = {
          moduleState,
          globalProperty: g.__left ?? null,
          prototypePatch: typeof Array.prototype.__left,
          patchedBuiltin: Math.max.__left === true,
          timerFired: g.__timer ?? null,
          localStorage: typeof g.localStorage,
        };
        if (input.leave) {
          g.__left = input.leave;
          Array.prototype.__left = () => 'patched';
          const max = Math.max;
          const wrapped = (...a) => max(...a);
          wrapped.__left = true;
          Math.max = wrapped;
          setTimeout(() => { g.__timer = 'fired after the call'; }, 50);
        }
        return { pid: Deno.pid, seen };
      }`;
    const t = { ...tool('echo'), name: 'leaves-state', source };
    type Seen = { pid: number; seen: Record<string, unknown> };
    const first = outputOf<Seen>(await sandbox.run(job(t, { leave: 'from caller A' })));
    const second = outputOf<Seen>(await sandbox.run(job(t, { wait: true })));
    expect(second.pid).toBe(first.pid);
    expect(first.seen).toEqual({
      moduleState: 1,
      globalProperty: null,
      prototypePatch: 'undefined',
      patchedBuiltin: false,
      timerFired: null,
      localStorage: 'undefined',
    });
    // module state is fresh; globals, patched prototypes and built-ins, and a timer's effects carry over
    expect(second.seen).toEqual({
      moduleState: 1,
      globalProperty: 'from caller A',
      prototypePatch: 'function',
      patchedBuiltin: true,
      timerFired: 'fired after the call',
      localStorage: 'undefined',
    });
  });

  it('secrets are part of the key: calls with other secret values never share a process', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 2 }), logger: captureLogger().logger });
    const withA = await counters(sandbox, tool('counter'), 1);
    const a = outputOf<Counter>(await sandbox.run(job(tool('counter'), {}, { secrets: { TOKEN: 'secret-a' } }))).pid;
    const a2 = outputOf<Counter>(await sandbox.run(job(tool('counter'), {}, { secrets: { TOKEN: 'secret-a' } }))).pid;
    const b = outputOf<Counter>(await sandbox.run(job(tool('counter'), {}, { secrets: { TOKEN: 'secret-b' } }))).pid;
    expect(a2).toBe(a);
    expect(new Set([withA[0]?.pid, a, b]).size).toBe(3);
  });
});

describe("a caller's demand for process isolation (job.isolation)", () => {
  const STASH = `export async function execute(input) {
    const g = globalThis;
    const seen = g.__stash ?? null;
    if (input.put !== undefined) g.__stash = input.put;
    return { pid: Deno.pid, seen };
  }`;
  type Stash = { pid: number; seen: string | null };

  it("a demanding call gets a fresh process that sees no earlier caller's globals, whatever the tool and config say; warm callers still see the carry-over", async () => {
    // --reuse-tools keeps this tool warm even under process isolation: the caller's demand still wins.
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 1, poolMax: 4, isolation: 'process', reuseTools: ['stash'] }),
      logger: captureLogger().logger,
    });
    const t = { ...tool('echo'), name: 'stash', source: STASH };
    const a = outputOf<Stash>(await sandbox.run(job(t, { put: 'caller A secret' })));
    const b = outputOf<Stash>(await sandbox.run(job(t, {})));
    // the documented warm carry-over: B, a later caller of the same version, sees A's global
    expect(b).toEqual({ pid: a.pid, seen: 'caller A secret' });
    const c = outputOf<Stash>(await sandbox.run(job(t, { put: 'caller C secret' }, { isolation: 'process' })));
    expect(c.seen).toBeNull();
    expect(c.pid).not.toBe(a.pid);
    // C's process is never reused: the next demanding call gets another one, and warm callers never see C's data
    const d = outputOf<Stash>(await sandbox.run(job(t, {}, { isolation: 'process' })));
    expect(d.seen).toBeNull();
    expect(new Set([a.pid, c.pid, d.pid]).size).toBe(3);
    const e = outputOf<Stash>(await sandbox.run(job(t, {})));
    expect(e).toEqual({ pid: a.pid, seen: 'caller A secret' });
  });
});

describe('process isolation', () => {
  it('isolation "process" gives every call a fresh process', async () => {
    sandbox = await createSandbox({ config: testConfig({ isolation: 'process' }), logger: captureLogger().logger });
    const calls = await counters(sandbox, tool('counter'), 3);
    expect(calls.map((c) => c.calls)).toEqual([1, 1, 1]);
    expect(new Set(calls.map((c) => c.pid)).size).toBe(3);
  });
});

describe('code caching', () => {
  it('transpiles once per source, maps positions back to the tool lines, and falls back to TypeScript on a syntax error', async () => {
    const compiler = await createToolCompiler();
    expect(compiler.transpiles).toBe(true);
    const source = 'type N = number;\nexport async function execute(i: { n: N }): Promise<N> {\n  return i.n;\n}\n';
    const first = compiler.compile(source);
    expect(first.lang).toBe('js');
    expect(compiler.compile(source)).toBe(first);
    const js = Buffer.from(first.source64, 'base64').toString('utf8');
    expect(js).not.toContain(': N');
    expect(js).not.toContain('sourceMappingURL');
    // `return i.n;` is line 3 of the source; in the JavaScript it is line 2
    const jsLine = js.split('\n').findIndex((line) => line.includes('return i.n')) + 1;
    expect(jsLine).toBe(2);
    expect(first.mapPosition?.(jsLine, 3)).toEqual({ line: 3, column: 3 });
    const broken = compiler.compile('export async function execute( {');
    expect(broken).toEqual({
      lang: 'ts',
      source64: Buffer.from('export async function execute( {').toString('base64'),
    });
  });

  it('a self-contained tool also gets a module factory (no esbuild helper reads a global); importing, top-level await and import.meta keep the import per call', async () => {
    const compiler = await createToolCompiler();
    const source =
      'let calls = 0;\nexport const VERSION = 1;\nexport async function execute(i: { n: number }) {\n  calls++;\n  return { n: i.n, calls };\n}\n';
    const factory = compiler.compile(source).factory;
    expect(factory?.id).toMatch(/^[0-9a-f]{32}$/);
    const code = factory?.code ?? '';
    expect(code.startsWith('export default function (module, exports, __export, __toCommonJS) {')).toBe(true);
    // esbuild's own helpers are blanked out: nothing reads Object.defineProperty & co. at call time
    expect(code).not.toMatch(/Object\.|__defProp|__copyProps/);
    // `calls++;` is line 4 of the source, and of the factory (line numbers are kept)
    const line = code.split('\n').findIndex((l) => l.includes('calls++')) + 1;
    expect(factory?.mapPosition?.(line, 3)).toEqual({ line: 4, column: 3 });
    for (const other of [
      'import x from "data:text/javascript,export default 1";\nexport async function execute() { return x; }',
      'const v = await Promise.resolve(1);\nexport async function execute() { return v; }',
      'export async function execute() { return import.meta.url; }',
    ]) {
      const compiled = compiler.compile(other);
      expect(compiled.lang).toBe('js');
      expect(compiled.factory).toBeUndefined();
    }
  });

  it('warm calls through the module factory: fresh module state per call, patched globals of an earlier call do not break the exports', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const source = [
      'let calls = 0;',
      'export async function execute() {',
      '  calls++;',
      '  // what a hostile or careless call leaves behind for the next call of this version',
      "  Reflect.defineProperty(Object.prototype, 'set', { get() { return () => {}; }, configurable: true });",
      '  Reflect.set(Object, "defineProperty", () => { throw new Error("patched defineProperty"); });',
      '  return { calls, pid: Deno.pid };',
      '}',
    ].join('\n');
    const t = { ...tool('echo'), name: 'factory-state', source };
    const outputs = [];
    for (let i = 0; i < 3; i++) {
      const result = await sandbox.run(job(t));
      expect(result.ok, JSON.stringify(result)).toBe(true);
      outputs.push(result.ok ? (result.output as { calls: number; pid: number }) : undefined);
    }
    expect(outputs.map((o) => o?.calls)).toEqual([1, 1, 1]);
    expect(new Set(outputs.map((o) => o?.pid)).size).toBe(1);
  });

  it('without a transpiler every tool is sent as TypeScript', async () => {
    const compiler = await createToolCompiler(null);
    expect(compiler.transpiles).toBe(false);
    expect(compiler.compile('export const x: number = 1;')).toEqual({
      lang: 'ts',
      source64: Buffer.from('export const x: number = 1;').toString('base64'),
    });
  });

  it('a TypeScript error stack points at the tool line after transpiling, in a warm process', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const source = [
      'interface In { reason: string }',
      '',
      'type Out = { never: true };',
      'export async function execute(input: In): Promise<Out> {',
      '  const why: string = input.reason;',
      '',
      '  throw new Error(`typed boom: ${why}`);',
      '}',
    ].join('\n');
    const t = { ...tool('echo'), name: 'typed-throw', source };
    for (let i = 0; i < 2; i++) {
      const result = await sandbox.run(job(t, { reason: `call ${i}` }));
      expect(result).toMatchObject({ ok: false, error: { code: 'tool.error', message: `typed boom: call ${i}` } });
      expect(result.ok ? '' : result.error.details?.stack).toBe(
        `Error: typed boom: call ${i}\n    at execute (tool.ts:7:9)`,
      );
    }
  });
});
