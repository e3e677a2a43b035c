// Idempotency keys (src/request/policies/idempotency.ts) with the real store, claims, catalog and
// responder; only the host executor is replaced at its typed boundary (Executor) by a body the test
// settles, so every run is counted. Covers the key derivation, the record's MAC, the 409 race of two
// reservations, replay, park, conflict, and the fail-closed endings (edited, forged, deleted record;
// withdrawn first request; an earlier attempt of the same request), and that a request refused by
// the rate limit leaves the key free.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createRequestKeys,
  createStoreClient,
  requestIdentity,
  SCHEMA,
  TAG,
  type StoreClient,
} from '../../src/breadcrumbs/index.js';
import { createCatalog } from '../../src/catalog/catalog.js';
import { createStamper } from '../../src/catalog/deployment.js';
import { loadConfig } from '../../src/config/index.js';
import { inputHash } from '../../src/contract/canonical.js';
import { loadManifest, type HostTool } from '../../src/host-tools/index.js';
import { silentLogger } from '../../src/logger.js';
import type { ExecutionResult } from '../../src/result.js';
import { createClaimManager } from '../../src/request/claims.js';
import { routeRequest } from '../../src/request/route.js';
import { callOf, type Policy } from '../../src/request/policy.js';
import { createHostExecutor } from '../../src/request/execute.js';
import { createResponder } from '../../src/request/respond.js';
import { createRequestPath } from '../../src/request/path.js';
import { createJobQueue } from '../../src/queue/job-queue.js';
import {
  idempotencyMac,
  idempotencyPolicies,
  verifyIdempotencyRecord,
} from '../../src/request/policies/idempotency.js';
import { parseRateOverrides, rateLimitPolicy } from '../../src/request/policies/rate-limit.js';
import { createSandbox } from '../../src/sandbox/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';
import { createSecretResolver } from '../../src/tool-context/secrets.js';
import { onCleanup, startStore, tempDir } from '../store/helpers.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 5));
const ok = (output: unknown): ExecutionResult => ({ ok: true, output, durationMs: 1, logs: [], logsTruncated: false });

interface Run {
  input: unknown;
  finish(result: ExecutionResult): void;
}

async function rig(options: { rateLimited?: boolean } = {}) {
  const store = await startStore();
  const c: StoreClient = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  const { config } = loadConfig({ env: {}, argv: ['--workspace', WS, '--claim-ttl-ms', '60000'] });
  const dir = tempDir('idempotency-test-');
  const manifest = join(dir, 'tools.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      tools: [{ name: 'host.t', description: 'a host tool', schema: { type: 'object' }, command: ['/bin/true'] }],
    }),
  );
  const loaded = await loadManifest(manifest, { validator: createSchemaValidator() });
  if (!loaded.ok) throw new Error(loaded.error);
  const hostTools: HostTool[] = loaded.tools;
  const validator = createSchemaValidator();
  const catalog = createCatalog({
    client: c,
    workspace: WS,
    logger: silentLogger(),
    stamper: createStamper(Buffer.alloc(32, 6)),
    validate: (context, origin) => validateToolDefinition(context, { origin, config, validator }),
    operatorTools: () => new Map(),
    hostTools: () => hostTools,
  });
  await catalog.load();
  const runs: Run[] = [];
  const waiting: Array<(run: Run) => void> = [];
  const hardStop = new AbortController();
  onCleanup(() => hardStop.abort());
  const sandbox = await createSandbox({ config, logger: silentLogger() });
  onCleanup(() => sandbox.close());
  const idempotency = idempotencyPolicies({
    client: c,
    keys,
    workspace: WS,
    logger: silentLogger(),
    now: () => 1_000_000,
  });
  const policies: Policy[] = [
    idempotency.check,
    ...(options.rateLimited
      ? [
          rateLimitPolicy({
            overrides: parseRateOverrides({ 'host.t': { per_tool: { limit: 1, window_ms: 3_600_000 } } }),
          }),
        ]
      : []),
    idempotency.reserve,
  ];
  const { job: handler } = createRequestPath({
    client: c,
    keys,
    queue: createJobQueue({ concurrency: 4, toolConcurrency: 4, backlog: 100 }),
    sandbox,
    secrets: createSecretResolver({ client: c, workspace: WS, logger: silentLogger() }),
    claims: createClaimManager({
      client: c,
      workspace: WS,
      holder: 'A',
      ttlMs: config.claimTtlMs,
      keys,
      logger: silentLogger(),
    }),
    catalog,
    validator,
    policies,
    executors: {
      host: createHostExecutor({
        run: (_tool, input) =>
          new Promise<ExecutionResult>((resolve) => {
            const run = { input, finish: resolve };
            runs.push(run);
            waiting.shift()?.(run);
          }),
      }),
    },
    responder: createResponder({ client: c, workspace: WS, keys, logger: silentLogger() }),
    config,
    logger: silentLogger(),
    replica: 'A',
    hardStop: hardStop.signal,
  });
  const nextRun = (): Promise<Run> => new Promise((resolve) => waiting.push(resolve));
  const createRequest = async (input: unknown, key: string | undefined, agent = 'ag', requestId?: string) => {
    const context = {
      tool: 'host.t',
      input,
      ...(key !== undefined ? { idempotency_key: key } : {}),
      ...(requestId ? { requestId } : {}),
    };
    const created = await c.createBreadcrumb({
      title: 'r',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS, TAG.agent(agent)],
      context,
    });
    return { breadcrumbId: created.id, rid: requestId ?? created.id, tool: 'host.t' };
  };
  const answerOf = async (breadcrumbId: string) => {
    const items = await c.listBreadcrumbs({
      schema_name: SCHEMA.ToolResponse,
      tag: keys.answerTag(breadcrumbId),
      include_context: true,
    });
    expect(items).toHaveLength(1);
    return items[0]!.context as Record<string, any>;
  };
  const records = (agent: string, key: string) =>
    c.listBreadcrumbs({
      schema_name: SCHEMA.ToolIdempotency,
      tag: keys.idempotencyTag({ agent, tool: 'host.t', key }),
      include_context: true,
    });
  /** The Call a request makes, for driving one policy directly. */
  const callFor = async (request: { breadcrumbId: string }, input: unknown, key: string) => {
    const full = await c.getBreadcrumbFull(request.breadcrumbId);
    const routed = await routeRequest(catalog, 'host.t');
    if (!routed.ok) throw new Error('not routed');
    return callOf({
      identity: requestIdentity({ id: full.id, tags: full.tags, context: full.context }),
      route: routed.route,
      input,
      idempotencyKey: key,
    });
  };
  const signal = new AbortController().signal;
  return { c, handler, runs, nextRun, createRequest, answerOf, records, callFor, idempotency, signal };
}

/** Runs a request to its answer with `output` as the tool's result; resolves with the handler's outcome. */
async function runToAnswer(
  r: Awaited<ReturnType<typeof rig>>,
  request: { breadcrumbId: string; rid: string; tool: string },
  output: unknown,
) {
  const outcome = r.handler.handle(request, r.signal);
  const run = await r.nextRun();
  run.finish(ok(output));
  return outcome;
}

describe('idempotency keys: derivation and MAC', () => {
  it('derives header-safe keys and tags that separate agent, tool and key and depend on the secret', () => {
    const a = keys.idempotencyKey({ agent: 'a', tool: 'b:c', key: 'k' });
    expect(a).toMatch(/^idempotency-[A-Za-z0-9_-]{32}$/);
    expect(keys.idempotencyKey({ agent: 'a:b', tool: 'c', key: 'k' })).not.toBe(a);
    expect(keys.idempotencyKey({ agent: '', tool: 'b:c', key: 'ak' })).not.toBe(a);
    expect(keys.idempotencyKey({ agent: 'a', tool: 'b:c', key: 'k' })).toBe(a);
    expect(createRequestKeys(Buffer.alloc(32, 9)).idempotencyKey({ agent: 'a', tool: 'b:c', key: 'k' })).not.toBe(a);
    // Agent strings no header could carry still give a plain key.
    expect(keys.idempotencyKey({ agent: 'agent\u2603\n', tool: 't', key: 'x'.repeat(200) })).toMatch(
      /^idempotency-[A-Za-z0-9_-]{32}$/,
    );
    expect(keys.idempotencyTag({ agent: 'a', tool: 'b:c', key: 'k' })).toMatch(/^idempotency:[A-Za-z0-9_-]{32}$/);
  });

  it('a record verifies only with its own fields, binding and secret', () => {
    const fields = {
      agent_id: 'ag',
      tool: 't',
      idempotency_key: 'k',
      version: '1.0.0',
      input_hash: 'sha256:aa',
      request_id: 'r1',
      request_breadcrumb_id: 'b1',
      created_at: '2024-01-01T00:00:00.000Z',
    };
    const record = { ...fields, mac: idempotencyMac(keys, fields) };
    const binding = { agent: 'ag', tool: 't', key: 'k' };
    expect(verifyIdempotencyRecord(keys, binding, record)).toEqual(record);
    for (const [field, value] of Object.entries({
      version: '2.0.0',
      input_hash: 'sha256:bb',
      request_id: 'r2',
      request_breadcrumb_id: 'b2',
      created_at: '2024-01-02T00:00:00.000Z',
    })) {
      expect(verifyIdempotencyRecord(keys, binding, { ...record, [field]: value }), field).toBeUndefined();
    }
    expect(
      verifyIdempotencyRecord(keys, { ...binding, agent: 'other' }, { ...record, agent_id: 'other' }),
    ).toBeUndefined();
    expect(verifyIdempotencyRecord(keys, { ...binding, key: 'k2' }, record)).toBeUndefined();
    expect(verifyIdempotencyRecord(createRequestKeys(Buffer.alloc(32, 9)), binding, record)).toBeUndefined();
    expect(verifyIdempotencyRecord(keys, binding, { ...record, mac: undefined })).toBeUndefined();
  });
});

describe('idempotency keys: the request path', () => {
  it('a repeat with the same key and input gets the first result for its own rid and does not run', async () => {
    const r = await rig();
    const first = await r.createRequest({ n: 1 }, 'key-1', 'ag', 'rid-first');
    expect(await runToAnswer(r, first, { made: 1 })).toBe('answered');
    const again = await r.createRequest({ n: 1 }, 'key-1', 'ag', 'rid-again');
    expect(await r.handler.handle(again, r.signal)).toBe('answered');
    expect(r.runs).toHaveLength(1);
    const answer = await r.answerOf(again.breadcrumbId);
    expect(answer).toMatchObject({
      request_id: 'rid-again',
      status: 'success',
      output: { made: 1 },
      metadata: { replayed_from: { rid: 'rid-first', request_breadcrumb_id: first.breadcrumbId } },
    });
    // The record names the first request, with the input hash and version that ran.
    const records = await r.records('ag', 'key-1');
    expect(records).toHaveLength(1);
    expect(records[0]!.context).toMatchObject({
      agent_id: 'ag',
      tool: 'host.t',
      idempotency_key: 'key-1',
      input_hash: inputHash({ n: 1 }),
      request_id: 'rid-first',
      request_breadcrumb_id: first.breadcrumbId,
    });
  });

  it('replays an error answer as it was', async () => {
    const r = await rig();
    const first = await r.createRequest({}, 'key-e');
    const outcome = r.handler.handle(first, r.signal);
    (await r.nextRun()).finish({
      ok: false,
      error: { code: 'tool.error', message: 'boom', retryable: false, details: { at: 1 } } as never,
      durationMs: 1,
      logs: [],
      logsTruncated: false,
    });
    await outcome;
    const again = await r.createRequest({}, 'key-e');
    await r.handler.handle(again, r.signal);
    expect(r.runs).toHaveLength(1);
    expect(await r.answerOf(again.breadcrumbId)).toMatchObject({
      status: 'error',
      error: { code: 'tool.error', message: 'boom', retryable: false, details: { at: 1 } },
    });
  });

  it('the same key from another agent, or without a key, is a separate call', async () => {
    const r = await rig();
    await runToAnswer(r, await r.createRequest({}, 'shared'), 1);
    expect(await runToAnswer(r, await r.createRequest({}, 'shared', 'other'), 2)).toBe('answered');
    expect(await runToAnswer(r, await r.createRequest({}, undefined), 3)).toBe('answered');
    expect(r.runs).toHaveLength(3);
  });

  it('a repeat while the first still runs parks on the first answer, then replays it', async () => {
    const r = await rig();
    const first = await r.createRequest({}, 'key-p', 'ag', 'rid-1');
    const firstOutcome = r.handler.handle(first, r.signal);
    const run = await r.nextRun();
    const again = await r.createRequest({}, 'key-p', 'ag', 'rid-2');
    expect(await r.handler.handle(again, r.signal)).toEqual({
      kind: 'parked',
      until: 1_000_000 + 30_000,
      wakeOn: [keys.answerTag(first.breadcrumbId)],
    });
    run.finish(ok('once'));
    expect(await firstOutcome).toBe('answered');
    expect(await r.handler.handle(again, r.signal)).toBe('answered');
    expect(r.runs).toHaveLength(1);
    expect(await r.answerOf(again.breadcrumbId)).toMatchObject({
      request_id: 'rid-2',
      output: 'once',
      metadata: { replayed_from: { rid: 'rid-1' } },
    });
  });

  it('the same key with a different input is a conflict naming the first rid and both hashes', async () => {
    const r = await rig();
    await runToAnswer(r, await r.createRequest({ a: 1 }, 'key-c', 'ag', 'rid-a'), 'x');
    const other = await r.createRequest({ a: 2 }, 'key-c', 'ag', 'rid-b');
    await r.handler.handle(other, r.signal);
    expect(r.runs).toHaveLength(1);
    expect((await r.answerOf(other.breadcrumbId))['error']).toEqual({
      code: 'conflict',
      message: `idempotency key "key-c" of tool "host.t" was first used by request "rid-a" with a different payload: input hash ${inputHash({ a: 1 })} (this request: ${inputHash({ a: 2 })}); send a new key for a different call`,
      retryable: false,
      details: { first_request_id: 'rid-a', differs: ['input_hash'] },
    });
  });

  it('two reservations racing: the store gives the key to one, the other parks on its answer', async () => {
    const r = await rig();
    const a = await r.createRequest({}, 'key-race', 'ag', 'rid-a');
    const b = await r.createRequest({}, 'key-race', 'ag', 'rid-b');
    const [gateA, gateB] = await Promise.all([
      r.idempotency.reserve.admit!(await r.callFor(a, {}, 'key-race'), r.signal),
      r.idempotency.reserve.admit!(await r.callFor(b, {}, 'key-race'), r.signal),
    ]);
    const gates = [gateA, gateB];
    const winner = gateA.kind === 'run' ? a : b;
    expect(gates.filter((g) => g.kind === 'run')).toHaveLength(1);
    expect(gates.find((g) => g.kind !== 'run')).toEqual({
      kind: 'park',
      reason: `waiting for the answer of request "${winner.rid}", the first with idempotency key "key-race"`,
      until: 1_030_000,
      wakeOn: [keys.answerTag(winner.breadcrumbId)],
    });
    expect(await r.records('ag', 'key-race')).toHaveLength(1);
  });

  it('a request refused by the rate limit leaves the key free; its retry is decided afresh', async () => {
    const r = await rig({ rateLimited: true });
    await runToAnswer(r, await r.createRequest({}, undefined), 'token taken');
    const limited = await r.createRequest({}, 'key-rl');
    await r.handler.handle(limited, r.signal);
    expect((await r.answerOf(limited.breadcrumbId))['error']).toMatchObject({ code: 'rate.exceeded' });
    expect(await r.records('ag', 'key-rl')).toEqual([]);
    const retry = await r.createRequest({ other: true }, 'key-rl');
    await r.handler.handle(retry, r.signal);
    const answer = await r.answerOf(retry.breadcrumbId);
    expect(answer['error']).toMatchObject({ code: 'rate.exceeded' });
    expect(answer['metadata']).not.toHaveProperty('replayed_from');
  });

  it('a replay needs no rate-limit token', async () => {
    const r = await rig({ rateLimited: true });
    const first = await r.createRequest({}, 'key-t', 'ag', 'rid-t');
    await runToAnswer(r, first, 'v');
    const again = await r.createRequest({}, 'key-t');
    await r.handler.handle(again, r.signal);
    expect(await r.answerOf(again.breadcrumbId)).toMatchObject({
      status: 'success',
      output: 'v',
      metadata: { replayed_from: { rid: 'rid-t' } },
    });
  });
});

describe('idempotency keys: hostile writers', () => {
  it('an edited record is named as tampering: no run, no replay', async () => {
    const r = await rig();
    const first = await r.createRequest({ a: 1 }, 'key-x');
    await runToAnswer(r, first, 'secret result');
    const [record] = await r.records('ag', 'key-x');
    // Rebind the record to another input, hoping a different call gets the first result.
    await r.c.updateBreadcrumb(record!.id, { context: { ...record!.context, input_hash: inputHash({ a: 2 }) } });
    const other = await r.createRequest({ a: 2 }, 'key-x');
    await r.handler.handle(other, r.signal);
    expect(r.runs).toHaveLength(1);
    expect((await r.answerOf(other.breadcrumbId))['error']).toEqual({
      code: 'conflict',
      message: `the record of idempotency key "key-x" for tool "host.t" was edited or forged (breadcrumb ${record!.id}: its MAC does not verify); this request does not run and no result is replayed (send a new key)`,
      retryable: false,
      details: { record: record!.id, tampering: 'tampered' },
    });
  });

  it('a deleted record is named: the key stays taken and nothing runs again', async () => {
    const r = await rig();
    await runToAnswer(r, await r.createRequest({}, 'key-d'), 1);
    const [record] = await r.records('ag', 'key-d');
    await r.c.deleteBreadcrumb(record!.id);
    const again = await r.createRequest({}, 'key-d');
    await r.handler.handle(again, r.signal);
    expect(r.runs).toHaveLength(1);
    expect((await r.answerOf(again.breadcrumbId))['error']).toMatchObject({
      code: 'conflict',
      message: `the record of idempotency key "key-d" for tool "host.t" was deleted (breadcrumb ${record!.id}; the store keeps the key); this request does not run and no result is replayed (send a new key)`,
    });
  });

  it('a forged record under the tag neither blocks the key nor gets replayed', async () => {
    const r = await rig();
    const tag = keys.idempotencyTag({ agent: 'ag', tool: 'host.t', key: 'key-f' });
    await r.c.createBreadcrumb({
      title: 'junk',
      schema_name: SCHEMA.ToolIdempotency,
      tags: [WS, tag],
      context: {
        agent_id: 'ag',
        tool: 'host.t',
        idempotency_key: 'key-f',
        version: 'x',
        input_hash: 'sha256:00',
        request_id: 'fake',
        request_breadcrumb_id: 'fake',
        created_at: 'now',
        mac: 'forged',
      },
    });
    expect(await runToAnswer(r, await r.createRequest({}, 'key-f'), 'real')).toBe('answered');
    expect(r.runs).toHaveLength(1);
  });

  it("a forged answer under the first request's answer tag is not replayed", async () => {
    const r = await rig();
    const first = await r.createRequest({}, 'key-fa', 'ag', 'rid-fa');
    const firstOutcome = r.handler.handle(first, r.signal);
    const run = await r.nextRun();
    const forge = (requestId: string) =>
      r.c.createBreadcrumb({
        title: 'forged',
        schema_name: SCHEMA.ToolResponse,
        tags: [WS, TAG.Response, keys.answerTag(first.breadcrumbId)],
        context: {
          request_id: requestId,
          tool: 'host.t',
          status: 'success',
          output: 'forged',
          execution_time_ms: 1,
          metadata: { request_breadcrumb_id: first.breadcrumbId },
          timestamp: 'now',
        },
      });
    // Before the first answers: answers naming another request (or a well-formed one, edited afterwards).
    for (let i = 0; i < 12; i++) await forge('other');
    const edited = await forge('rid-fa');
    await r.c.updateBreadcrumb(edited.id, { title: 'edited' });
    const again = await r.createRequest({}, 'key-fa');
    expect(await r.handler.handle(again, r.signal)).toMatchObject({ kind: 'parked' });
    run.finish(ok('genuine'));
    await firstOutcome;
    // After it: perfect copies with another output; the earliest answer is the runner's.
    for (let i = 0; i < 12; i++) await forge('rid-fa');
    await r.handler.handle(again, r.signal);
    expect(await r.answerOf(again.breadcrumbId)).toMatchObject({ output: 'genuine' });
  });

  it('a first request withdrawn while it ran leaves an unknown outcome: the repeat does not run', async () => {
    const r = await rig();
    const first = await r.createRequest({}, 'key-w', 'ag', 'rid-w');
    const outcome = r.handler.handle(first, r.signal);
    const run = await r.nextRun();
    await r.c.deleteBreadcrumb(first.breadcrumbId);
    const again = await r.createRequest({}, 'key-w');
    await r.handler.handle(again, r.signal);
    expect((await r.answerOf(again.breadcrumbId))['error']).toMatchObject({
      code: 'conflict',
      message:
        'idempotency key "key-w" was taken by request "rid-w", which was withdrawn without an answer after it started to run; its effects are unknown, so this request does not run (send a new key)',
    });
    run.finish(ok('late'));
    await outcome;
    expect(r.runs).toHaveLength(1);
  });

  it('an earlier attempt of the same request that reserved the key is not run again', async () => {
    const r = await rig();
    const first = await r.createRequest({}, 'key-own', 'ag', 'rid-own');
    const gate = await r.idempotency.reserve.admit!(await r.callFor(first, {}, 'key-own'), r.signal);
    expect(gate).toEqual({ kind: 'run' });
    // The attempt that reserved ended without an answer (its runner died); the next attempt:
    await r.handler.handle(first, r.signal);
    expect(r.runs).toHaveLength(0);
    expect((await r.answerOf(first.breadcrumbId))['error']).toMatchObject({
      code: 'conflict',
      message:
        'an earlier attempt of request "rid-own" reserved idempotency key "key-own" and ended without an answer (runner restart or drain while it ran); its effects are unknown, so it does not run again',
    });
  });
});
