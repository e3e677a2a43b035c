// The request handler's orchestration with the real store, claims, catalog, checks and responder;
// only the host executor is replaced, at its typed boundary (Executor), by a body the test settles.
// Covers: one answer with the claim's attempt, the input the executor receives (after R8), a drain
// that releases the claim without an answer, a withdrawal that answers nothing, an executor that
// throws (still one answer), and output nested too deeply.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createRequestKeys,
  createStoreClient,
  SCHEMA,
  StoreError,
  TAG,
  type StoreClient,
} from '../../src/breadcrumbs/index.js';
import { createCatalog } from '../../src/catalog/catalog.js';
import { createStamper } from '../../src/catalog/deployment.js';
import { loadConfig } from '../../src/config/index.js';
import { RunnerError, ErrorCode } from '../../src/errors.js';
import { loadManifest, type HostTool } from '../../src/host-tools/index.js';
import { silentLogger } from '../../src/logger.js';
import type { ExecutionResult } from '../../src/result.js';
import { RequestWithdrawn } from '../../src/request/intake.js';
import { createClaimManager } from '../../src/request/claims.js';
import { createHostExecutor, type RunContext } from '../../src/request/execute.js';
import { createResponder } from '../../src/request/respond.js';
import type { Call, Policy, Settled } from '../../src/request/policy.js';
import { errorResult } from '../../src/result.js';
import { createRequestPath } from '../../src/request/path.js';
import { createJobQueue } from '../../src/queue/job-queue.js';
import { createSandbox } from '../../src/sandbox/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';
import { createSecretResolver } from '../../src/tool-context/secrets.js';
import { onCleanup, startStore, tempDir } from '../store/helpers.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 5));

interface Run {
  input: Record<string, unknown>;
  ctx: RunContext;
  finish(result: ExecutionResult | Error): void;
}

async function rig(options: { failingReads?: number; policies?: Policy[] } = {}) {
  const store = await startStore();
  const c: StoreClient = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  // A store fault at the client's typed boundary: the handler's first reads of a request fail (503).
  let failingReads = options.failingReads ?? 0;
  const handlerClient: StoreClient = {
    ...c,
    getBreadcrumbFull: (id, opts) => {
      if (failingReads-- > 0)
        return Promise.reject(
          new StoreError({ status: 503, storeCode: 'unavailable', message: 'store unavailable (injected)' }),
        );
      return c.getBreadcrumbFull(id, opts);
    },
  };
  const { config } = loadConfig({ env: {}, argv: ['--workspace', WS, '--claim-ttl-ms', '60000'] });
  const validator = createSchemaValidator();
  const dir = tempDir('handler-test-');
  const manifest = join(dir, 'tools.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      tools: [{ name: 'host.t', description: 'a host tool', schema: { type: 'object' }, command: ['/bin/true'] }],
    }),
  );
  const loaded = await loadManifest(manifest, { validator });
  if (!loaded.ok) throw new Error(loaded.error);
  const hostTools: HostTool[] = loaded.tools;
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
  // The code executor is real but unused here (no tool.code.v1 exists); the sandbox is never started.
  const sandbox = await createSandbox({ config, logger: silentLogger() });
  onCleanup(() => sandbox.close());
  const { job: handler } = createRequestPath({
    client: handlerClient,
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
    policies: options.policies ?? [],
    executors: {
      host: createHostExecutor({
        run: (_tool, input, ctx) =>
          new Promise<ExecutionResult>((resolve, reject) => {
            const run = {
              input,
              ctx,
              finish: (r: ExecutionResult | Error) => (r instanceof Error ? reject(r) : resolve(r)),
            };
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
  const createRequest = async (input: unknown) => {
    const created = await c.createBreadcrumb({
      title: 'r',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS, TAG.agent('ag')],
      context: { tool: 'host.t', input },
    });
    return { breadcrumbId: created.id, rid: created.id, tool: 'host.t' };
  };
  const answers = async (breadcrumbId: string) =>
    c.listBreadcrumbs({ schema_name: SCHEMA.ToolResponse, tag: keys.answerTag(breadcrumbId), include_context: true });
  return { c, handler, nextRun, createRequest, answers };
}

const ok = (output: unknown): ExecutionResult => ({ ok: true, output, durationMs: 1, logs: [], logsTruncated: false });

describe('request handler', () => {
  // The 30 s outlier of issue 12: a job that failed after claiming (store trouble reading the
  // request) kept its live claim, so the intake's retry found its own lease "busy" and the request
  // waited for the lease to run out (claim TTL, 30 s by default) and a periodic scan to take it over.
  it('a job that fails after claiming gives its claim back: the retry runs at once as the next attempt', async () => {
    const r = await rig({ failingReads: 1 });
    const request = await r.createRequest({ n: 1 });
    await expect(r.handler.handle(request, new AbortController().signal)).rejects.toThrow(
      'store unavailable (injected)',
    );
    const next = r.nextRun().then((run) => {
      run.finish(ok({ n: 1 }));
      return run;
    });
    // without the claim given back, this retry answers 'busy' (its own live lease) and runs nothing
    expect(await r.handler.handle(request, new AbortController().signal)).toBe('answered');
    expect((await next).input).toEqual({ n: 1 });
    const answers = await r.answers(request.breadcrumbId);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.context).toMatchObject({ status: 'success', output: { n: 1 }, metadata: { attempt: 2 } });
  });

  it('answers once, with the attempt, the agent tag and the normalised input the executor saw', async () => {
    const r = await rig();
    const request = await r.createRequest(null);
    const outcome = r.handler.handle(request, new AbortController().signal);
    const run = await r.nextRun();
    expect(run.input).toEqual({});
    expect(run.ctx).toMatchObject({ breadcrumbId: request.breadcrumbId, agentId: 'ag' });
    run.finish(ok({ done: true }));
    expect(await outcome).toBe('answered');
    const answers = await r.answers(request.breadcrumbId);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.tags).toContain('agent:ag');
    expect(answers[0]?.context).toMatchObject({
      status: 'success',
      output: { done: true },
      metadata: { kind: 'host', transport: 'exec', attempt: 1, replica: 'A' },
    });
  });

  it('a drain that aborts the run releases the claim and writes no answer', async () => {
    const r = await rig();
    const request = await r.createRequest({});
    const drain = new AbortController();
    const outcome = r.handler.handle(request, drain.signal);
    const run = await r.nextRun();
    drain.abort(new Error('service stopping'));
    run.finish({
      ok: false,
      error: { code: ErrorCode.Timeout, message: 'aborted', retryable: true },
      durationMs: 1,
      logs: [],
      logsTruncated: false,
    });
    expect(await outcome).toBe('released');
    expect(await r.answers(request.breadcrumbId)).toEqual([]);
  });

  it('a withdrawn request is not answered', async () => {
    const r = await rig();
    const request = await r.createRequest({});
    const job = new AbortController();
    const outcome = r.handler.handle(request, job.signal);
    const run = await r.nextRun();
    job.abort(new RequestWithdrawn(request.breadcrumbId));
    run.finish(ok({}));
    expect(await outcome).toBe('withdrawn');
    expect(await r.answers(request.breadcrumbId)).toEqual([]);
  });

  it('an executor that throws still ends in exactly one answer carrying its code and message', async () => {
    const r = await rig();
    const request = await r.createRequest({});
    const outcome = r.handler.handle(request, new AbortController().signal);
    (await r.nextRun()).finish(new RunnerError(ErrorCode.DependencyUnavailable, 'secrets API at http://x is down'));
    expect(await outcome).toBe('answered');
    const answers = await r.answers(request.breadcrumbId);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.context).toMatchObject({
      status: 'error',
      error: { code: 'dependency.unavailable', message: 'secrets API at http://x is down' },
    });
  });

  it('output nested deeper than the limit is answered output.invalid', async () => {
    const r = await rig();
    const request = await r.createRequest({});
    const outcome = r.handler.handle(request, new AbortController().signal);
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = [deep];
    (await r.nextRun()).finish(ok(deep));
    expect(await outcome).toBe('answered');
    const answers = await r.answers(request.breadcrumbId);
    expect(answers[0]?.context).toMatchObject({
      status: 'error',
      error: { code: 'output.invalid', message: 'output is nested deeper than 128 levels' },
    });
  });

  it.each([
    ['a BigInt', { n: 10n }, /^the answer cannot be serialised: .*BigInt/],
    [
      'a cycle (caught as endless nesting)',
      (() => {
        const o: Record<string, unknown> = {};
        o['self'] = o;
        return o;
      })(),
      /^output is nested deeper than 128 levels$/,
    ],
  ])('output the store cannot take (%s) is answered output.invalid, once', async (_what, output, reason) => {
    const r = await rig();
    const request = await r.createRequest({});
    const outcome = r.handler.handle(request, new AbortController().signal);
    (await r.nextRun()).finish(ok(output));
    expect(await outcome).toBe('answered');
    const answers = await r.answers(request.breadcrumbId);
    expect(answers).toHaveLength(1);
    expect(answers[0]?.context).toMatchObject({
      status: 'error',
      error: { code: 'output.invalid', message: expect.stringMatching(reason) },
    });
  });

  it('input that is not an object never reaches the executor', async () => {
    const r = await rig();
    const request = await r.createRequest([1, 2]);
    expect(await r.handler.handle(request, new AbortController().signal)).toBe('answered');
    const answers = await r.answers(request.breadcrumbId);
    expect(answers[0]?.context).toMatchObject({
      status: 'error',
      error: { code: 'input.invalid', message: 'input must be a JSON object (got array)' },
      metadata: { kind: 'host' },
    });
  });

  describe('policies', () => {
    it('a park gate ends the job with no answer and no claim: the request can be taken again at once', async () => {
      let parks = 1;
      const r = await rig({
        policies: [
          {
            name: 'park-once',
            admit: () =>
              parks-- > 0
                ? { kind: 'park', reason: 'waiting for approval', until: Date.now() + 60_000, wakeOn: ['approval:x'] }
                : { kind: 'run' },
          },
        ],
      });
      const request = await r.createRequest({});
      expect(await r.handler.handle(request, new AbortController().signal)).toEqual({
        kind: 'parked',
        until: expect.any(Number),
        wakeOn: ['approval:x'],
      });
      expect(await r.answers(request.breadcrumbId)).toEqual([]);
      const outcome = r.handler.handle(request, new AbortController().signal);
      (await r.nextRun()).finish(ok({ ran: true }));
      expect(await outcome).toBe('answered');
      expect((await r.answers(request.breadcrumbId))[0]?.context).toMatchObject({
        status: 'success',
        output: { ran: true },
        metadata: { attempt: 2 },
      });
    });

    it('an answer gate answers without running; later policies are not asked; settle learns ran=false', async () => {
      const settled: Settled[] = [];
      const seen: string[] = [];
      const r = await rig({
        policies: [
          {
            name: 'refuse',
            admit: (call) => {
              seen.push(`refuse:${call.inputHash.slice(0, 7)}`);
              return {
                kind: 'answer',
                result: errorResult(ErrorCode.RateExceeded, 'slow down', { retry_after_ms: 5 }),
              };
            },
          },
          {
            name: 'never',
            admit: () => {
              seen.push('never');
              return { kind: 'run' };
            },
            settle: (_call, s) => void settled.push(s),
          },
        ],
      });
      const request = await r.createRequest({ a: 1 });
      expect(await r.handler.handle(request, new AbortController().signal)).toBe('answered');
      expect(seen).toEqual(['refuse:sha256:']);
      expect((await r.answers(request.breadcrumbId))[0]?.context).toMatchObject({
        status: 'error',
        error: { code: 'rate.exceeded', message: 'slow down', details: { retry_after_ms: 5 } },
      });
      expect(settled).toEqual([
        { result: expect.objectContaining({ ok: false }), ran: false, attempts: 0, durationMs: expect.any(Number) },
      ]);
    });

    it("review replaces the run's result, policy metadata and warnings reach the answer, and a failing settle does not lose it", async () => {
      const calls: Call[] = [];
      const r = await rig({
        policies: [
          {
            name: 'annotate',
            admit: (call) => {
              call.metadata['approval_id'] = 'ap-1';
              call.warnings.push('tool host.t@x is deprecated');
              calls.push(call);
              return { kind: 'run' };
            },
            review: (_call, result) => (result.ok ? { ...result, output: { reviewed: result.output } } : result),
            settle: () => {
              throw new Error('audit store down');
            },
          },
        ],
      });
      const request = await r.createRequest({});
      const outcome = r.handler.handle(request, new AbortController().signal);
      (await r.nextRun()).finish(ok({ v: 1 }));
      expect(await outcome).toBe('answered');
      const context = (await r.answers(request.breadcrumbId))[0]?.context;
      expect(context).toMatchObject({
        status: 'success',
        output: { reviewed: { v: 1 } },
        metadata: { approval_id: 'ap-1', warnings: ['tool host.t@x is deprecated'] },
      });
      expect(calls[0]).toMatchObject({
        version: expect.any(String),
        contract: {},
        input: {},
        identity: { agentId: 'ag', breadcrumbId: request.breadcrumbId },
      });
    });
  });
});
