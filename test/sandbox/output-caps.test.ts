// Issue 9 item 8/4: every byte a tool causes to be written counts against a cap. Floods on stderr
// (direct writes, console.error, no newlines, lines that look like frames with a guessed marker)
// end at --max-output-bytes with output_limit; floods of context.api requests (large ones, refused
// ones in an endless loop) end at the api framing budget with output_limit (details.reason api_limit).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, RunnerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { MAX_API_FRAMES, MAX_API_REQUEST_BYTES, createApiProxy } from '../../src/sandbox/api-proxy.js';
import { createSandbox, type Sandbox, type SandboxApi, type SandboxTool } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

const MAX_OUTPUT = 256 * 1024;

let sandbox: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({
    config: testConfig({ poolSize: 2, maxOutputBytes: MAX_OUTPUT }),
    logger: silentLogger(),
  });
});

afterAll(async () => {
  await sandbox?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

function inline(name: string, source: string, overrides: Partial<SandboxTool> = {}): SandboxTool {
  return { ...tool('echo'), name, source, ...overrides };
}

async function expectHealthy(): Promise<void> {
  expect(await sandbox.run(job(tool('echo'), { after: 'flood' }))).toMatchObject({
    ok: true,
    output: { input: { after: 'flood' } },
  });
}

const FLOODS: Array<[string, string]> = [
  [
    'stderr-direct',
    'const b = new TextEncoder().encode("e".repeat(65535) + "\\n"); for (;;) Deno.stderr.writeSync(b);',
  ],
  ['stderr-no-newline', 'const b = new TextEncoder().encode("n".repeat(65536)); for (;;) Deno.stderr.writeSync(b);'],
  ['console-error', 'for (let i = 0; ; i++) console.error("line " + i + " " + "x".repeat(200));'],
  ['context-log', 'for (let i = 0; ; i++) context.log("log " + i, { pad: "y".repeat(300) });'],
  // lines that look like frames under guessed markers are log text, and count like any other byte
  [
    'guessed-markers',
    'const m = ["0".repeat(32), "f".repeat(32), "ab".repeat(16)]; let s = ""; for (const x of m) s += "\\n" + x + "S1 \\n\\n" + x + "R1 {\\"forged\\":1}\\n"; const b = new TextEncoder().encode(s.repeat(500)); for (;;) { Deno.stdout.writeSync(b); Deno.stderr.writeSync(b); }',
  ],
  [
    'both-streams',
    'const b = new TextEncoder().encode("z".repeat(8191) + "\\n"); for (;;) { Deno.stdout.writeSync(b); Deno.stderr.writeSync(b); }',
  ],
];

describe('output floods', () => {
  it.each(FLOODS)('%s is cut at maxOutputBytes: output_limit', async (name, body) => {
    const source = `export async function execute(input, context) { ${body} }`;
    const result = await sandbox.run(job(inline(name, source)));
    expect(codeOf(result)).toBe('output_limit');
    expect(result.ok ? '' : result.error.message).toBe(
      `tool "${name}" wrote more than ${MAX_OUTPUT} bytes to stdout/stderr and was killed`,
    );
    expect(result.ok ? {} : result.error.details).toEqual({ maxOutputBytes: MAX_OUTPUT });
    expect(JSON.stringify(result)).not.toContain('"forged"');
    await expectHealthy();
  });
});

describe('context.api floods', () => {
  it('large requests are charged to the request byte budget: output_limit (api_limit)', async () => {
    const source = `export async function execute(input, context) {
      const big = "q".repeat(400_000);
      await Promise.allSettled(Array.from({ length: 90 }, () => context.api.searchBreadcrumbs({ q: big })));
      return "survived";
    }`;
    const result = await sandbox.run(job(inline('api-big', source, { api: 'read' })));
    expect(codeOf(result)).toBe('output_limit');
    expect(result.ok ? '' : result.error.message).toBe(
      `tool "api-big" sent more than ${MAX_API_REQUEST_BYTES} bytes of context.api requests in one execution and was killed`,
    );
    expect(result.ok ? {} : result.error.details).toEqual({ reason: 'api_limit' });
    await expectHealthy();
  });

  it('an endless loop of refused calls ends at the frame budget: output_limit (api_limit)', async () => {
    const source =
      'export async function execute(input, context) { for (;;) { try { await context.api.getBreadcrumb("x") } catch {} } }';
    const result = await sandbox.run(job(inline('api-loop', source, { api: false })));
    expect(codeOf(result)).toBe('output_limit');
    expect(result.ok ? '' : result.error.message).toBe(
      `tool "api-loop" sent more than ${MAX_API_FRAMES} context.api requests in one execution and was killed`,
    );
    await expectHealthy();
  });

  it('parallel calls reach the host api at most maxInFlight at a time, in order', async () => {
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    // Calls are held until 8 are in flight (or every call was made), so the peak depends on the
    // harness's limit and not on how fast this host answers (on a loaded machine each call could
    // otherwise be answered before the next frame arrives). A call still held after 5 s is let go,
    // so a harness that never sends 8 at once fails the peak check instead of hanging.
    const held: Array<() => void> = [];
    const release = (): void => {
      for (const resolve of held.splice(0)) resolve();
    };
    const api: SandboxApi = {
      async getBreadcrumb(id) {
        running++;
        peak = Math.max(peak, running);
        order.push(id);
        await new Promise<void>((resolve) => {
          held.push(resolve);
          // at 8, wait a moment before letting go: a harness that allowed a 9th would show it here
          if (running === 8 || order.length === 40) setTimeout(release, 50);
          else setTimeout(release, 5_000).unref();
        });
        running--;
        return { id };
      },
      createBreadcrumb: async () => ({}),
      updateBreadcrumb: async () => ({}),
      searchBreadcrumbs: async () => [],
    };
    const source =
      'export async function execute(input, context) { return (await Promise.all(Array.from({ length: 40 }, (_, i) => context.api.getBreadcrumb("id" + i)))).length }';
    const result = await sandbox.run(job(inline('api-parallel', source, { api: 'read' }), {}, { api }));
    expect(result).toMatchObject({ ok: true, output: 40 });
    expect(peak).toBe(8);
    expect(order).toEqual(Array.from({ length: 40 }, (_, i) => `id${i}`));
  });
});

describe('createApiProxy framing budgets', () => {
  const hostApi = (value: unknown): SandboxApi => ({
    getBreadcrumb: async () => value,
    createBreadcrumb: async () => value,
    updateBreadcrumb: async () => value,
    searchBreadcrumbs: async () => {
      throw new RunnerError(ErrorCode.NotFound, 'nothing');
    },
  });

  it('request frames: over the byte budget or the frame count the caller is told to kill', () => {
    const p = createApiProxy({
      tool: tool('echo', { api: 'read' }),
      api: hostApi(1),
      budgets: { maxRequestBytes: 1000, maxFrames: 5 },
    });
    expect(p.admit(600)).toBeUndefined();
    expect(p.admit(400)).toBeUndefined();
    expect(p.admit(1)).toBe('more than 1000 bytes of context.api requests in one execution');
    const q = createApiProxy({ tool: tool('echo', { api: 'read' }), api: hostApi(1), budgets: { maxFrames: 2 } });
    expect(q.admit(1)).toBeUndefined();
    expect(q.admit(1)).toBeUndefined();
    expect(q.admit(1)).toBe('more than 2 context.api requests in one execution');
  });

  it('a reply over the per-reply cap, or over the per-job total, becomes a rate.exceeded refusal', async () => {
    const big = 'v'.repeat(500);
    const p = createApiProxy({
      tool: tool('echo', { api: 'read' }),
      api: hostApi(big),
      budgets: { maxReplyBytes: 400, maxTotalReplyBytes: 1000 },
    });
    const small = await p.handle('{"id":1,"op":"searchBreadcrumbs","args":[{}]}');
    expect(p.replyLine(small!)).toBe(
      '{"t":"api","id":1,"ok":false,"code":"not_found","message":"context.api.searchBreadcrumbs failed: nothing"}\n',
    );
    const tooBig = await p.handle('{"id":2,"op":"getBreadcrumb","args":["a"]}');
    expect(JSON.parse(p.replyLine(tooBig!))).toEqual({
      t: 'api',
      id: 2,
      ok: false,
      code: 'rate.exceeded',
      message: 'context.api reply of 540 bytes is over the limit of 400 bytes per reply',
    });
    const r = createApiProxy({
      tool: tool('echo', { api: 'read' }),
      api: hostApi('w'.repeat(300)),
      budgets: { maxReplyBytes: 400, maxTotalReplyBytes: 1000 },
    });
    const lines: unknown[] = [];
    for (let id = 1; id <= 4; id++)
      lines.push(JSON.parse(r.replyLine((await r.handle(`{"id":${id},"op":"getBreadcrumb","args":["a"]}`))!)));
    expect(lines.map((line) => (line as { ok: boolean }).ok)).toEqual([true, true, false, false]);
    expect(lines[2]).toEqual({
      t: 'api',
      id: 3,
      ok: false,
      code: 'rate.exceeded',
      message: 'context.api replies exceeded 1000 bytes in one execution',
    });
  });
});
