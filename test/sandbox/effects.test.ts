// Effects counted at the sandbox boundary: every network use the harness can see is reported (an
// N frame, before the connection is tried) whatever shape the tool gives its target, the wrappers
// cannot be stepped around (original constructors, node: built-ins, Workers, patched primitives),
// frames cannot be forged, and context.api writes are recorded by the host as they begin.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { IMPORT_MAP_JSON, NODE_BUILTINS } from '../../src/sandbox/command.js';
import { resolveDeno } from '../../src/sandbox/deno-binary.js';
import { createSandbox, type Sandbox, type SandboxApi, type SandboxTool } from '../../src/sandbox/index.js';
import { expectNoLeaks, isolateTmp, job, testConfig } from './helpers.js';

let sandbox: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({ config: testConfig({ poolSize: 1 }), logger: silentLogger() });
});

afterAll(async () => {
  await sandbox?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

/** A tool granted api.example.com whose body is `body` (it may use `input` and `context`). */
function netTool(name: string, body: string, overrides: Partial<SandboxTool> = {}): SandboxTool {
  const source = `export async function execute(input, context) { const seen = {}; ${body}; return seen; }`;
  return {
    name,
    version: '1.0.0',
    source,
    net: ['api.example.com'],
    api: false,
    timeoutMs: 20_000,
    memoryMb: 128,
    ...overrides,
  };
}

const API = { kind: 'net.fetch', target: 'api.example.com:443', at_ms: expect.any(Number) };
const CONNECT = { kind: 'net.connect', target: 'api.example.com:443', at_ms: expect.any(Number) };

describe('network effects', () => {
  it.each([
    ['a string URL', 'fetch("https://api.example.com/pay").catch(() => {})', [API]],
    ['a URL object', 'fetch(new URL("https://api.example.com/pay")).catch(() => {})', [API]],
    ['a Request', 'fetch(new Request("https://api.example.com/pay", { method: "POST" })).catch(() => {})', [API]],
    ['an explicit port', 'fetch("https://api.example.com:443/x").catch(() => {})', [API]],
    [
      'a host it was not granted (Deno refuses; no effect)',
      'await fetch("https://other.example.org/").catch(() => {})',
      [],
    ],
    ['a data: URL (no network)', 'await fetch("data:text/plain,hi")', []],
    ['Deno.connect', 'Deno.connect({ hostname: "api.example.com", port: 443 }).catch(() => {})', [CONNECT]],
    ['Deno.connectTls', 'Deno.connectTls({ hostname: "api.example.com", port: 443 }).catch(() => {})', [CONNECT]],
    ['WebSocket', 'try { new WebSocket("wss://api.example.com/feed").onerror = () => {}; } catch {}', [CONNECT]],
    [
      'EventSource',
      'const es = new EventSource("https://api.example.com/events"); es.onerror = () => es.close()',
      [API],
    ],
  ])('%s is reported', async (_what, body, effects) => {
    const result = await sandbox.run(job(netTool('net-shapes', body)));
    expect(result.ok).toBe(true);
    expect(result.effects ?? []).toEqual(effects);
  });

  it('a target whose string changes between reads is read once: the reported host is the one used', async () => {
    const body = `let reads = 0;
      const shifty = { toString() { reads++; return reads === 1 ? "https://api.example.com/" : "https://other.example.org/"; } };
      await fetch(shifty).catch((e) => { seen.error = String(e.name); });
      seen.reads = reads;`;
    const result = await sandbox.run(job(netTool('net-shifty', body)));
    expect(result).toMatchObject({ ok: true, output: { reads: 1 }, effects: [API] });
  });

  it('connect options read once: a getter cannot report one host and connect to another', async () => {
    const body = `let reads = 0;
      const options = { get hostname() { reads++; return reads === 1 ? "api.example.com" : "other.example.org"; }, port: 443 };
      await Deno.connect(options).catch(() => {});
      seen.reads = reads;`;
    const result = await sandbox.run(job(netTool('net-getter', body)));
    expect(result).toMatchObject({ ok: true, output: { reads: 1 }, effects: [CONNECT] });
  });

  it('the originals are out of reach: prototype constructors are the wrappers', async () => {
    const body = `seen.ws = WebSocket.prototype.constructor === WebSocket;
      seen.es = EventSource.prototype.constructor === EventSource;
      const Orig = Object.getPrototypeOf(new EventSource("data:,x")).constructor;
      seen.same = Orig === EventSource;
      try { new (WebSocket.prototype.constructor)("wss://api.example.com/"); } catch {}`;
    const result = await sandbox.run(job(netTool('net-protos', body)));
    expect(result.ok && result.output).toEqual({ ws: true, es: true, same: true });
    expect(result.effects).toEqual([CONNECT]);
  });

  // Deno builds these globals on their first read; the harness closes them at that read (not at boot),
  // which may come after tool code patched every primitive it could.
  const PATCH_ALL = `Object.getPrototypeOf = () => null; Object.setPrototypeOf = (o) => o; Object.hasOwn = () => false;
      Object.getOwnPropertyDescriptor = () => ({ get() { return "https://other.example.org/"; } });
      Object.defineProperty = (o) => o; Array.prototype[Symbol.iterator] = function* () {};`;
  it.each([
    ['process', 'void globalThis.process'],
    ['Buffer', 'void globalThis.Buffer'],
    ['setImmediate', 'void globalThis.setImmediate'],
    ['clearImmediate', 'void globalThis.clearImmediate'],
    [
      'the getter of process',
      'void Reflect.apply(Reflect.getOwnPropertyDescriptor(globalThis, "process").get, globalThis, [])',
    ],
  ])('process escapes are gone when %s is first read after the tool patched primitives', async (_what, firstRead) => {
    const body = `${PATCH_ALL} ${firstRead};
      const p = globalThis.process;
      seen.builtin = typeof p.getBuiltinModule; seen.binding = typeof p.binding; seen.linked = typeof p._linkedBinding; seen.dlopen = typeof p.dlopen;`;
    const result = await sandbox.run(
      job(netTool(`lazy-process-${_what.replace(/\W/g, '')}`, body, { isolation: 'process' })),
    );
    expect(result.ok && result.output).toEqual({
      builtin: 'undefined',
      binding: 'undefined',
      linked: 'undefined',
      dlopen: 'undefined',
    });
  });

  it.each([
    [
      'WebSocket',
      'try { new WebSocket("wss://api.example.com/feed").onerror = () => {}; } catch {}',
      'WebSocket',
      [CONNECT],
    ],
    [
      'EventSource',
      'const es = new EventSource("https://api.example.com/events"); es.onerror = () => es.close()',
      'EventSource',
      [API],
    ],
    [
      'Request',
      'await fetch(new Request("https://api.example.com/pay", { method: "POST" })).catch(() => {})',
      'Request',
      [API],
    ],
  ])(
    '%s first read after the tool patched primitives is still wrapped and reported',
    async (name, use, global, effects) => {
      const body = `${PATCH_ALL} ${use}; seen.own = globalThis.${global}.prototype.constructor === globalThis.${global};`;
      const result = await sandbox.run(job(netTool(`lazy-${name}`, body, { isolation: 'process' })));
      expect(result).toMatchObject({ ok: true, output: { own: true } });
      expect(result.effects ?? []).toEqual(effects);
    },
  );

  it('node: built-ins, process.getBuiltinModule and Workers are closed to a tool with network access', async () => {
    const body = `
      seen.net = await (0, eval)("import('node:net')").then(() => "loaded", (e) => e.message);
      seen.http = await (0, eval)("import('node:https')").then(() => "loaded", (e) => e.message);
      seen.bare = await (0, eval)("import('tls')").then(() => "loaded", (e) => e.message);
      seen.builtin = typeof globalThis.process?.getBuiltinModule;
      seen.binding = typeof globalThis.process?.binding;
      try { new Worker("data:application/javascript,fetch('https://api.example.com/')", { type: "module" }); seen.worker = "started"; } catch (e) { seen.worker = e.message; }`;
    const result = await sandbox.run(job(netTool('net-bypass', body)));
    expect(result.ok && result.output).toEqual({
      net: 'node:net is not available to tools',
      http: 'node:https is not available to tools',
      bare: 'node:tls is not available to tools',
      builtin: 'undefined',
      binding: 'undefined',
      worker: 'Worker is not available to a tool with network access: its network use could not be counted',
    });
    expect(result.effects).toBeUndefined();
  });

  it('the import map is a file of the private temp dir (short command lines), and tool code cannot read it', async () => {
    // The pool keeps a warm process after a run: find it by its command line (TMPDIR is this file's).
    expect((await sandbox.run(job(netTool('map-warm', '')))).ok).toBe(true);
    const lines = readdirSync('/proc')
      .filter((pid) => /^\d+$/.test(pid))
      .flatMap((pid) => {
        try {
          return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')];
        } catch {
          return [];
        }
      });
    const ours = lines.filter((args) => args.some((arg) => arg.startsWith(`--import-map=${tmp.dir}/`)));
    expect(ours.length).toBeGreaterThan(0);
    const args = ours[0] as string[];
    expect(args.join(' ').length).toBeLessThan(2_000);
    const mapPath = (args.find((arg) => arg.startsWith('--import-map=')) as string).slice('--import-map='.length);
    expect(readFileSync(mapPath, 'utf8')).toBe(IMPORT_MAP_JSON);
    const body = `try { Deno.readTextFileSync(input.path); seen.read = "read"; } catch (e) { seen.read = e.name; }`;
    const result = await sandbox.run(job(netTool('map-read', body), { path: mapPath }));
    expect(result.ok && result.output).toEqual({ read: 'NotCapable' });
  });

  it('patched primitives neither stop the report nor forge one; guessed frames are log text', async () => {
    const body = `
      JSON.stringify = () => '{"kind":"net.fetch","target":"forged.example:1"}';
      String.prototype.slice = () => "";
      Deno.permissions.querySync = () => ({ state: "denied" });
      URL.prototype.toString = () => "https://forged.example/";
      console.log("\\n0123456789abcdef0123456789abcdefN1 {\\"kind\\":\\"net.fetch\\",\\"target\\":\\"guessed.example:1\\"}");
      fetch("https://api.example.com/").catch(() => {});
      seen.done = true;`;
    const result = await sandbox.run(job(netTool('net-patched', body)));
    expect(result.effects).toEqual([API]);
  });

  it('a warm process refuses network use after its call ended (nothing unreported happens between calls)', async () => {
    // The late fetch runs after a chain of microtasks: after the call's result is sent (the harness's
    // continuation of the call is a few microtasks) and before the process can read the next job (a
    // read is a macrotask). A timer instead raced the second call: firing during it, its fetch was that
    // call's own network use, as designed, and the test failed about 1 run in 10.
    const body = `if (input.first) {
        let hop = Promise.resolve();
        for (let i = 0; i < 50; i++) hop = hop.then(() => undefined);
        hop.then(() => fetch("https://api.example.com/late")).then(() => { globalThis.__late = "sent"; }, (e) => { globalThis.__late = e.message; });
      } else {
        seen.late = globalThis.__late;
      }`;
    const t = netTool('net-late', body);
    const first = await sandbox.run(job(t, { first: true }));
    expect(first).toMatchObject({ ok: true });
    expect(first.effects).toBeUndefined();
    const second = await sandbox.run(job(t, { first: false }));
    expect(second).toMatchObject({ ok: true, output: { late: 'network use after the call ended' } });
    expect(second.effects).toBeUndefined();
  });

  it('a hang after the report still ends with the effect listed (timeout)', async () => {
    const body =
      'fetch("https://api.example.com/").catch(() => {}); await new Promise(() => setInterval(() => {}, 1000))';
    const result = await sandbox.run(job(netTool('net-hang', body, { timeoutMs: 1000 })));
    expect(result).toMatchObject({ ok: false, error: { code: 'timeout' }, effects: [API] });
  });
});

describe('the import map', () => {
  it('covers every node built-in of the installed Deno', async () => {
    const deno = (await resolveDeno()).path;
    const script = 'import m from "node:module"; console.log(JSON.stringify(m.builtinModules))';
    const listed = JSON.parse(
      execFileSync(deno, ['eval', '--no-config', script], {
        encoding: 'utf8',
        env: { PATH: '/usr/bin:/bin', NO_COLOR: '1' },
      }),
    ) as string[];
    const missing = listed.map((name) => name.replace(/^node:/, '')).filter((name) => !NODE_BUILTINS.includes(name));
    expect(missing).toEqual([]);
  });
});

describe('context.api writes', () => {
  const api = (): SandboxApi => ({
    getBreadcrumb: async () => ({}),
    searchBreadcrumbs: async () => [],
    createBreadcrumb: async () => ({ id: 'rec-9' }),
    updateBreadcrumb: async (id) => {
      if (id === 'missing') throw Object.assign(new Error('breadcrumb "missing" not found'), { code: 'not_found' });
      return { ok: true };
    },
  });

  it('are recorded when they begin, with the created id; refused ones are not; a hang keeps them', async () => {
    const body = `
      await context.api.createBreadcrumb({ title: "x" });
      await context.api.updateBreadcrumb("rec-3", 1, { title: "y" });
      await context.api.updateBreadcrumb("not an id!", 1, { title: "y" }).catch(() => {});
      await context.api.getBreadcrumb("rec-3");
      await new Promise(() => setInterval(() => {}, 1000));`;
    const t = netTool('api-writes', body, { net: [], api: 'write', timeoutMs: 1500 });
    const result = await sandbox.run(job(t, {}, { api: api() }));
    expect(result).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(result.effects).toEqual([
      { kind: 'store.create', target: 'rec-9', at_ms: expect.any(Number) },
      { kind: 'store.update', target: 'rec-3', at_ms: expect.any(Number) },
    ]);
  });

  it('effect targets never carry secret values of the call', async () => {
    const body = 'await context.api.updateBreadcrumb(context.secrets.K, 1, { title: "y" })';
    const t = netTool('api-secret', body, { net: [], api: 'write' });
    const result = await sandbox.run(job(t, {}, { api: api(), secrets: { K: 'topsecret42' } }));
    expect(result.effects).toEqual([{ kind: 'store.update', target: '[REDACTED]', at_ms: expect.any(Number) }]);
  });
});
