// Hostile writers against the request path (a real runner process with its embedded store, real
// Deno): request ids no header can carry, results too deep to store, junk squatting the keys and
// tags the runner uses, forged and tampered claims, and a requestId taken by someone else first.
// Every attack must end with the service alive, each request answered exactly once with a stable
// code, no request executed more often than it was attempted, and a healthy call answered at once.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import {
  MAX_REQUEST_ID_LENGTH,
  SCHEMA,
  TAG,
  ToolResponseContext,
  type ToolResponseContext as Response,
} from '../../src/breadcrumbs/messages.js';
import { untilScans, untilSettled } from '../support/waits.js';
import {
  adminUrl,
  answer,
  CLAIM_TTL_MS,
  cleanupAll,
  client,
  putTool,
  request,
  startRunnerWithStore,
  toolContext,
  WS,
  type CliProcess,
} from './harness.js';

let c: StoreClient;
let runner: CliProcess;
let admin: string;

/** Once the runner has had every chance to run `rid` again: scans after any lease taken until now expired, then idle. */
const settled = (): Promise<void> => untilSettled(admin, Date.now() + CLAIM_TTL_MS);

/** Records each execution as a breadcrumb tagged `exec:<mark>` (input.mark), then returns `result`. */
const counting = (result: string) =>
  `export async function execute(input, context) {
     await context.api.createBreadcrumb({ title: 'exec', schema_name: 'e2e.exec.v1', tags: ['exec:' + input.mark], context: {} });
     ${result}
   }`;
const apiWrite = { permissions: { net: false, api: 'write' }, limits: { timeout_ms: 10_000, memory_mb: 128 } };

async function executions(mark: string): Promise<number> {
  return (await c.listBreadcrumbs({ tag: `exec:${mark}`, limit: 100 })).length;
}

/** Every tool.response.v1 tagged request:<rid> (whoever wrote it). */
async function responsesFor(rid: string): Promise<Response[]> {
  const items = await c.listBreadcrumbs({
    schema_name: SCHEMA.ToolResponse,
    tag: TAG.request(rid),
    include_context: true,
    limit: 100,
  });
  return items.map((item) => ToolResponseContext.parse(item.context));
}

/** Waits until the runner's own answer for `rid` exists (it carries request_breadcrumb_id). */
async function runnerAnswer(rid: string, timeoutMs = 30_000): Promise<Response[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ours = (await responsesFor(rid)).filter((r) => typeof r.metadata?.['request_breadcrumb_id'] === 'string');
    if (ours.length > 0) return ours;
    if (Date.now() > deadline) throw new Error(`no runner answer for ${JSON.stringify(rid)} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function healthy(): Promise<void> {
  const rid = await request(c, 'h-echo', { n: 1 });
  const response = await answer(c, rid, 15_000);
  expect(response.status).toBe('success');
  expect(runner.proc.exitCode).toBeNull();
}

/** Writes a request breadcrumb with exactly this context (no client-side checks). */
async function rawRequest(context: Record<string, unknown>, tags: string[] = [TAG.Request, WS]): Promise<string> {
  const { id } = await c.createBreadcrumb({ title: 'Request', schema_name: SCHEMA.ToolRequest, tags, context });
  return id;
}

beforeAll(async () => {
  // Breadcrumb claims, so the claim-tampering cases below have claim records to vandalise; the
  // hostile cases of lease claims (the embedded store's default) start a runner of their own.
  const started = await startRunnerWithStore(['--claims', 'breadcrumb', '--admin-port', '0'], {
    TOOLS_RUNNER_LOG_LEVEL: 'info',
  });
  runner = started.runner;
  admin = await adminUrl(runner);
  c = client(started.url);
  await Promise.all([
    putTool(c, toolContext('h-echo', 'export async function execute(input) { return { got: input }; }')),
    putTool(
      c,
      toolContext(
        'h-deep',
        counting('let v = 0; for (let i = 0; i < input.depth; i++) v = [v]; return { v };'),
        apiWrite,
      ),
    ),
    putTool(c, toolContext('h-count', counting('return { ok: true };'), apiWrite)),
    putTool(
      c,
      toolContext(
        'h-slow',
        counting('await new Promise((r) => setTimeout(r, input.ms)); return { ok: true };'),
        apiWrite,
      ),
    ),
  ]);
}, 120_000);

afterAll(cleanupAll);

describe('request ids are data, never headers or keys', () => {
  it.each([
    ['a euro sign', 'crash-€-1'],
    ['CJK and emoji', '请求-🚀-2'],
    ['Latin-1 letters', 'café-ñ-3'],
    ['quotes, slashes and a colon', `a"b'c/d\\e:f-${Date.now()}`],
    ['exactly the longest allowed', 'x'.repeat(MAX_REQUEST_ID_LENGTH - 13) + Date.now()],
  ])('%s runs and is answered under that id', async (_what, rid) => {
    await rawRequest({ tool: 'h-echo', input: { n: 2 }, requestId: rid });
    const [response, ...more] = await runnerAnswer(rid);
    expect(more).toEqual([]);
    expect(response?.status).toBe('success');
    expect(response?.request_id).toBe(rid);
    await healthy();
  });

  it.each([
    ['a control character', 'crash-\u0001-1', /U\+0001 at index 6/],
    ['a newline', 'line\nbreak', /U\+000A at index 4/],
    ['a C1 control', 'c1-\u009b-x', /U\+009B/],
    ['a bidi override', 'bidi-\u202e-x', /U\+202E/],
    ['a zero-width joiner', 'zw-\u200d-x', /U\+200D/],
    ['a lone surrogate', 'sur-\ud800-x', /U\+D800/],
    ['300 characters', 'y'.repeat(300), /300 characters long; at most 200/],
    ['10,000 characters', 'z'.repeat(10_000), /10000 characters long/],
    ['a number', 42, /must be a string, got number/],
    ['an object', { a: 1 }, /must be a string, got object/],
  ])('%s is answered input.invalid under the breadcrumb id', async (_what, requestId, message) => {
    const id = await rawRequest({ tool: 'h-echo', input: { n: 3 }, requestId });
    const [response, ...more] = await runnerAnswer(id);
    expect(more).toEqual([]);
    expect(response?.error?.code).toBe('input.invalid');
    expect(response?.error?.message).toMatch(message);
    expect(response?.request_id).toBe(id);
    await healthy();
  });
});

describe('a completed run always ends in exactly one answer', () => {
  it.each([
    ['6,000 nested arrays', 6000],
    ['300 nested arrays (more than the store takes)', 300],
    ['129 nested arrays (just past the limit)', 129],
  ])('%s: output.invalid, executed once', async (_what, depth) => {
    const mark = `deep-${depth}-${Date.now()}`;
    const rid = await request(c, 'h-deep', { mark, depth });
    const response = await answer(c, rid);
    expect(response.error?.code).toBe('output.invalid');
    expect(response.error?.message).toMatch(/nested deeper than 128 levels/);
    // Let any (wrong) re-execution show itself: scans after the lease would have expired, then idle.
    await settled();
    expect(await executions(mark)).toBe(1);
    expect(await responsesFor(rid)).toHaveLength(1);
    await healthy();
  });

  it('a result at the depth limit is delivered', async () => {
    const mark = `deep-ok-${Date.now()}`;
    const rid = await request(c, 'h-deep', { mark, depth: 120 });
    const response = await answer(c, rid);
    expect(response.status).toBe('success');
  });

  it('input nested past the limit is input.invalid and never runs', async () => {
    let input: unknown = { mark: 'never' };
    for (let i = 0; i < 140; i++) input = [input];
    const rid = await request(c, 'h-count', { mark: 'never', nested: input });
    const response = await answer(c, rid);
    expect(response.error?.code).toBe('input.invalid');
    expect(response.error?.message).toMatch(/nested deeper than 128 levels/);
    expect(await executions('never')).toBe(0);
  });
});

describe('keys and tags the runner uses cannot be squatted or forged', () => {
  it('junk under the old predictable keys neither silences nor stalls a request', async () => {
    const rid = `squat-${Date.now()}`;
    const mark = `squat-${Date.now()}`;
    const junk = { title: 'junk', schema_name: 'junk.v1', tags: ['junk'], context: {} };
    for (const key of [
      `response:${rid}`,
      `claim:${rid}:1`,
      `claim:${rid}:2`,
      `claim:${rid}:3`,
      `claim:${rid}:4`,
      `create-response:${rid}`,
    ]) {
      await c.createBreadcrumb(junk, { idempotencyKey: key });
    }
    await request(c, 'h-count', { mark }, rid);
    const [response, ...more] = await runnerAnswer(rid);
    expect(more).toEqual([]);
    expect(response?.status).toBe('success');
    expect(await executions(mark)).toBe(1);
  });

  it('a forged response tagged request:<rid>, written first, does not silence the request', async () => {
    const rid = `forged-answer-${Date.now()}`;
    const mark = `forged-${Date.now()}`;
    await c.createBreadcrumb({
      title: 'Response: h-count',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid)],
      context: {
        request_id: rid,
        tool: 'h-count',
        status: 'success',
        output: { forged: true },
        execution_time_ms: 1,
        metadata: {},
        timestamp: new Date().toISOString(),
      },
    });
    await request(c, 'h-count', { mark }, rid);
    const [response, ...more] = await runnerAnswer(rid);
    expect(more).toEqual([]);
    expect(response?.output).toEqual({ ok: true });
    expect(await executions(mark)).toBe(1);
  });

  it('forged live claims (any attempt, any tag) do not block a request', async () => {
    const rid = `forged-claim-${Date.now()}`;
    const mark = `fclaim-${Date.now()}`;
    const id = await rawRequest({ tool: 'h-count', input: { mark }, requestId: rid });
    const far = new Date(Date.now() + 3_600_000).toISOString();
    for (let attempt = 1; attempt <= 9; attempt++) {
      await c.createBreadcrumb({
        title: `Claim: ${rid}`,
        schema_name: SCHEMA.ToolClaim,
        tags: [WS, TAG.Claim, `claim:${rid}`, `claim:${id}`],
        context: {
          request_id: rid,
          request_breadcrumb_id: id,
          attempt,
          holder: 'mallory',
          expires_at: far,
          mac: 'AAAA',
        },
      });
    }
    const [response, ...more] = await runnerAnswer(rid);
    expect(more).toEqual([]);
    expect(response?.status).toBe('success');
    expect(await executions(mark)).toBe(1);
  });

  it('tampering with a live claim while its tool runs never causes a second execution', async () => {
    const rid = `tamper-${Date.now()}`;
    const mark = `tamper-${Date.now()}`;
    await request(c, 'h-slow', { mark, ms: 5000 }, rid);
    // Find the runner's claim (tagged with its derived claim tag) and vandalise it repeatedly.
    const deadline = Date.now() + 10_000;
    let claims: Array<{ id: string }> = [];
    while (claims.length === 0 && Date.now() < deadline) {
      claims = (
        await c.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: WS, include_context: true, limit: 100 })
      ).filter((item) => (item.context as { request_id?: string } | undefined)?.request_id === rid);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(claims.length).toBeGreaterThan(0);
    const claimId = claims[0]!.id;
    await c.updateBreadcrumb(claimId, {
      context: { request_id: rid, attempt: 1, holder: 'mallory', expires_at: new Date(0).toISOString() },
    });
    // Two scans that saw the vandalised claim (expired, someone else's) while the tool still runs.
    await untilScans(admin, 2);
    await c.deleteBreadcrumb(claimId).catch(() => undefined);
    const [response, ...more] = await runnerAnswer(rid, 40_000);
    expect(more).toEqual([]);
    expect(response?.status).toBe('success');
    await settled();
    expect(await executions(mark)).toBe(1);
  });

  it('with lease claims an agent can neither take, renew, release, finish nor list a lease, and forged claim records change nothing', async () => {
    const own = await startRunnerWithStore();
    const agent = client(own.url);
    await putTool(
      agent,
      toolContext(
        'h-slow',
        counting('await new Promise((r) => setTimeout(r, input.ms)); return { ok: true };'),
        apiWrite,
      ),
    );
    const mark = `lease-tamper-${Date.now()}`;
    const rid = await request(agent, 'h-slow', { mark, ms: 3000 });
    // While it runs (3 s), the agent tries every lease operation with a guessed key: each is refused.
    for (const op of ['acquire', 'renew', 'release', 'finish', 'expired', 'list']) {
      const refused = await agent
        .lease(op, { scope: WS, name: 'x', holder: 'mallory', token: 'guess', ttl_ms: 1 }, 'a-guessed-lease-key')
        .then(
          () => 'accepted',
          (error: { status?: number }) => error.status,
        );
      expect(refused, `lease ${op}`).toBe(403);
    }
    await agent.createBreadcrumb({
      title: 'Claim',
      schema_name: SCHEMA.ToolClaim,
      tags: [WS, TAG.Claim],
      context: { request_id: rid, attempt: 1, holder: 'mallory', expires_at: new Date(0).toISOString() },
    });
    const response = await answer(agent, rid, 40_000);
    expect(response.status).toBe('success');
    expect((await agent.listBreadcrumbs({ tag: `exec:${mark}`, limit: 100 })).length).toBe(1);
    // The runner wrote no claim record of its own (only mallory's forgery is there).
    const claims = await agent.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, include_context: true, limit: 100 });
    expect(claims.map((item) => (item.context as { holder?: string }).holder)).toEqual(['mallory']);
  });

  it('a requestId taken first by someone else: the victim still runs and gets its own answer', async () => {
    const rid = `predictable-${Date.now()}`;
    const attacker = await rawRequest({ tool: 'h-echo', input: { n: 666 }, requestId: rid });
    const first = await runnerAnswer(rid);
    expect(first[0]?.metadata?.['request_breadcrumb_id']).toBe(attacker);
    const victim = await rawRequest({ tool: 'h-echo', input: { n: 7 }, requestId: rid });
    const deadline = Date.now() + 20_000;
    let mine: Response | undefined;
    while (!mine && Date.now() < deadline) {
      mine = (await responsesFor(rid)).find((r) => r.metadata?.['request_breadcrumb_id'] === victim);
      if (!mine) await new Promise((r) => setTimeout(r, 100));
    }
    expect(mine?.output).toEqual({ got: { n: 7 } });
  });
});
