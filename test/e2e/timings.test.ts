// Stage timings through the real service: every tool.response.v1 carries metadata.timings with
// every stage but `respond`, all non-negative, adding up to no more than the time they measure; the
// admin port's /metrics shows tools_runner_stage_duration_seconds for every stage, respond included.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import type { ToolResponseContext } from '../../src/breadcrumbs/messages.js';
import { STAGES } from '../../src/request/timings.js';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  startRunnerWithStore,
  toolContext,
  type CliProcess,
} from './harness.js';

const ANSWER_STAGES = STAGES.filter((stage) => stage !== 'respond');
/** Each stage is rounded to 3 decimals: the rounding of a sum of several may exceed its whole by this. */
const ROUNDING = 0.001 * STAGES.length;

let c: StoreClient;
let admin: string;
let runner: CliProcess;

beforeAll(async () => {
  let url: string;
  ({ url, runner } = await startRunnerWithStore(['--admin-port', '0'], { TOOLS_RUNNER_LOG_LEVEL: 'info' }));
  const line = runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  admin = (JSON.parse(line as string) as { url: string }).url;
  c = client(url);
  await putTool(c, toolContext('timed-echo', 'export async function execute(input) { return { got: input }; }'));
  await putTool(
    c,
    toolContext('timed-fresh', 'export async function execute(input) { return { got: input }; }', {
      limits: { timeout_ms: 5000, memory_mb: 64, isolation: 'process' },
    }),
  );
});

afterAll(cleanupAll);

/** Sends one request and waits for its answer; `elapsedMs` is the caller's view of the whole call. */
async function timedCall(tool: string, input: unknown): Promise<{ response: ToolResponseContext; elapsedMs: number }> {
  // the tool may not be in the catalog yet right after putTool: retry a not-found answer
  for (let attempt = 0; ; attempt++) {
    const from = performance.now();
    const rid = await request(c, tool, input);
    const response = await answer(c, rid);
    const elapsedMs = performance.now() - from;
    if (response.status === 'success' || attempt > 50 || !tool.startsWith('timed-')) return { response, elapsedMs };
    await new Promise((r) => setTimeout(r, 100));
  }
}

function timingsOf(response: ToolResponseContext): Record<string, number> {
  const timings = response.metadata['timings'] as Record<string, number>;
  expect(Object.keys(timings).sort()).toEqual([...ANSWER_STAGES].sort());
  for (const stage of ANSWER_STAGES) {
    expect(typeof timings[stage], stage).toBe('number');
    expect(timings[stage], stage).toBeGreaterThanOrEqual(0);
    expect(Number.isFinite(timings[stage]), stage).toBe(true);
  }
  return timings;
}

const sum = (timings: Record<string, number>, stages: readonly string[]): number =>
  stages.reduce((n, stage) => n + (timings[stage] ?? 0), 0);

describe('stage timings', () => {
  it.each(['timed-echo', 'timed-fresh'])(
    'a successful call of %s carries every stage; they add up to no more than the call took',
    async (tool) => {
      const { response, elapsedMs } = await timedCall(tool, { n: 1 });
      expect(response).toMatchObject({ status: 'success', output: { got: { n: 1 } } });
      const timings = timingsOf(response);
      expect(timings['sandbox_run']).toBeGreaterThan(0);
      // total_ms runs from the job's start (after the claim and the read, which `route` counts too)
      // to the answer write
      const totalMs = response.metadata['total_ms'] as number;
      expect(sum(timings, ['validate', 'secrets', 'sandbox_wait', 'sandbox_run'])).toBeLessThanOrEqual(
        totalMs + ROUNDING,
      );
      // everything, queued and claim included, happened between the request's write and its answer
      expect(sum(timings, ANSWER_STAGES)).toBeLessThanOrEqual(elapsedMs + ROUNDING);
    },
  );

  it('an answer that never reached the sandbox carries every stage too, the sandbox ones 0', async () => {
    const { response } = await timedCall('no-such-tool', {});
    expect(response).toMatchObject({ status: 'error', error: { code: 'tool.not_found' } });
    const timings = timingsOf(response);
    expect({
      secrets: timings['secrets'],
      sandbox_wait: timings['sandbox_wait'],
      sandbox_run: timings['sandbox_run'],
      validate: timings['validate'],
    }).toEqual({
      secrets: 0,
      sandbox_wait: 0,
      sandbox_run: 0,
      validate: 0,
    });
  });

  it('/metrics shows tools_runner_stage_duration_seconds for every stage, respond included', async () => {
    await timedCall('timed-echo', { n: 2 });
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    for (const stage of STAGES) {
      const count = new RegExp(`^tools_runner_stage_duration_seconds_count\\{stage="${stage}"\\} (\\d+)$`, 'm').exec(
        metrics,
      );
      expect(count, stage).not.toBeNull();
      expect(Number(count?.[1]), stage).toBeGreaterThanOrEqual(2);
      expect(metrics).toMatch(
        new RegExp(`^tools_runner_stage_duration_seconds_bucket\\{le="\\+Inf",stage="${stage}"\\} \\d+$`, 'm'),
      );
    }
  });
});
