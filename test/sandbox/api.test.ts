// context.api: round trips through the harness's stdio to a host-side SandboxApi (here a small Map
// store), grant enforcement by the host, and hostile call shapes and volumes.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, RunnerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { createApiProxy } from '../../src/sandbox/api-proxy.js';
import { createSandbox, type Sandbox, type SandboxApi } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

interface Crumb {
  id: string;
  version: number;
  title?: unknown;
  tags?: unknown;
  context?: unknown;
}

/** A SandboxApi backed by a Map, enough to see every call arrive with the right arguments. */
function mapApi(): SandboxApi & { crumbs: Map<string, Crumb>; seen: string[] } {
  const crumbs = new Map<string, Crumb>();
  const seen: string[] = [];
  let next = 0;
  return {
    crumbs,
    seen,
    async getBreadcrumb(id) {
      seen.push(`get ${id}`);
      const crumb = crumbs.get(id);
      if (!crumb) throw new RunnerError(ErrorCode.NotFound, `breadcrumb ${id} not found`);
      return crumb;
    },
    async createBreadcrumb(body) {
      const id = `bc-${++next}`;
      seen.push(`create ${id}`);
      crumbs.set(id, { ...(body as object), id, version: 1 });
      return { id };
    },
    async updateBreadcrumb(id, version, patch) {
      seen.push(`update ${id} ${version}`);
      const crumb = crumbs.get(id);
      if (!crumb) throw new RunnerError(ErrorCode.NotFound, `breadcrumb ${id} not found`);
      if (version !== undefined && version !== crumb.version) {
        throw new RunnerError(ErrorCode.Conflict, `breadcrumb ${id} is at version ${crumb.version}, not ${version}`);
      }
      crumbs.set(id, { ...crumb, ...(patch as object), version: crumb.version + 1 });
      return { ok: true, version: crumb.version + 1 };
    },
    async searchBreadcrumbs(params) {
      const { tag } = params as { tag?: string };
      seen.push(`search ${tag}`);
      return [...crumbs.values()].filter((crumb) => (crumb.tags as string[] | undefined)?.includes(tag ?? ''));
    },
  };
}

let sandbox: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({ config: testConfig({ poolSize: 2 }), logger: silentLogger() });
});

afterAll(async () => {
  await sandbox?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const ALL_FOUR = [
  { op: 'createBreadcrumb', args: [{ title: 'made by tool', tags: ['t:1'], context: { n: 1 } }] },
  { op: 'getBreadcrumb', args: ['bc-1'] },
  { op: 'updateBreadcrumb', args: ['bc-1', 1, { context: { n: 2 } }] },
  { op: 'searchBreadcrumbs', args: [{ tag: 't:1' }] },
];

describe('context.api', () => {
  // process isolation: a single-use process starts reading its stdin only at its first context.api call
  it.each([undefined, 'process'] as const)(
    'with the write grant, all four calls round-trip to the host api (isolation: %s)',
    async (isolation) => {
      const api = mapApi();
      const result = await sandbox.run({
        ...job(tool('api-calls', { api: 'write' }), { calls: ALL_FOUR }, { api }),
        ...(isolation ? { isolation } : {}),
      });
      expect(result).toMatchObject({
        ok: true,
        output: [
          { ok: true, value: { id: 'bc-1' } },
          { ok: true, value: { id: 'bc-1', version: 1, title: 'made by tool', tags: ['t:1'], context: { n: 1 } } },
          { ok: true, value: { ok: true, version: 2 } },
          { ok: true, value: [{ id: 'bc-1', version: 2, context: { n: 2 } }] },
        ],
      });
      expect(api.seen).toEqual(['create bc-1', 'get bc-1', 'update bc-1 1', 'search t:1']);
    },
  );

  it('with the read grant, get/search work and writes are refused with permission.denied inside the tool', async () => {
    const api = mapApi();
    api.crumbs.set('bc-9', { id: 'bc-9', version: 3, tags: ['t:1'] });
    const calls = [...ALL_FOUR.slice(0, 1), { op: 'getBreadcrumb', args: ['bc-9'] }, ALL_FOUR[2], ALL_FOUR[3]];
    const result = await sandbox.run(job(tool('api-calls', { api: 'read' }), { calls }, { api }));
    expect(result).toMatchObject({
      ok: true,
      output: [
        {
          ok: false,
          code: 'permission.denied',
          message:
            'context.api.createBreadcrumb denied: tool "api-calls" has the "read" api grant; createBreadcrumb needs "write"',
        },
        { ok: true, value: { id: 'bc-9', version: 3 } },
        {
          ok: false,
          code: 'permission.denied',
          message:
            'context.api.updateBreadcrumb denied: tool "api-calls" has the "read" api grant; updateBreadcrumb needs "write"',
        },
        { ok: true, value: [{ id: 'bc-9' }] },
      ],
    });
    expect(api.seen).toEqual(['get bc-9', 'search t:1']);
  });

  it('with no grant every call is refused, and the host api is never called', async () => {
    const api = mapApi();
    const result = await sandbox.run(job(tool('api-calls', { api: false }), { calls: ALL_FOUR }, { api }));
    expect(result.ok).toBe(true);
    const output = (result as { output: Array<{ ok: boolean; code: string; message: string }> }).output;
    expect(output.map((entry) => entry.code)).toEqual(Array(4).fill('permission.denied'));
    expect(output[1]?.message).toBe('context.api.getBreadcrumb denied: tool "api-calls" has no api grant');
    expect(api.seen).toEqual([]);
  });

  it('an uncaught refusal ends the call as permission.denied', async () => {
    const result = await sandbox.run(job(tool('api-write-uncaught', { api: 'read' }), {}, { api: mapApi() }));
    expect(codeOf(result)).toBe('permission.denied');
    expect(result.ok ? '' : result.error.message).toBe(
      'context.api.createBreadcrumb denied: tool "api-write-uncaught" has the "read" api grant; createBreadcrumb needs "write"',
    );
  });

  it('host errors reach the tool with their code; hostile arguments are refused before the host api', async () => {
    const api = mapApi();
    const calls = [
      { op: 'getBreadcrumb', args: ['missing-id'] },
      { op: 'getBreadcrumb', args: ['../auth/token'] },
      { op: 'updateBreadcrumb', args: ['bc-1', 'one', {}] },
      { op: 'searchBreadcrumbs', args: [{ tag: { $ne: 1 } }] },
      { op: 'createBreadcrumb', args: [['not', 'an', 'object']] },
    ];
    const result = await sandbox.run(job(tool('api-calls', { api: 'write' }), { calls }, { api }));
    expect(result).toMatchObject({
      ok: true,
      output: [
        { ok: false, code: 'not_found', message: 'context.api.getBreadcrumb failed: breadcrumb missing-id not found' },
        {
          ok: false,
          code: 'input.invalid',
          message: 'context.api.getBreadcrumb: invalid breadcrumb id "../auth/token"',
        },
        {
          ok: false,
          code: 'input.invalid',
          message: 'context.api.updateBreadcrumb: version must be a positive integer, got "one"',
        },
        {
          ok: false,
          code: 'input.invalid',
          message: 'context.api.searchBreadcrumbs: parameter "tag" must be a string, number or boolean',
        },
        {
          ok: false,
          code: 'input.invalid',
          message: 'context.api.createBreadcrumb: body must be an object, got ["not","an","object"]',
        },
      ],
    });
    expect(api.seen).toEqual(['get missing-id']);
  });

  it('granted calls without a host api fail as dependency.unavailable', async () => {
    const result = await sandbox.run(
      job(tool('api-calls', { api: 'read' }), { calls: [{ op: 'getBreadcrumb', args: ['bc-1'] }] }),
    );
    expect(result).toMatchObject({ ok: true, output: [{ ok: false, code: 'dependency.unavailable' }] });
  });

  it('at most 100 calls per execution; the rest are refused with rate.exceeded', async () => {
    const api = mapApi();
    const result = await sandbox.run(job(tool('api-flood', { api: 'read' }), { n: 130 }, { api }));
    expect(result).toMatchObject({ ok: true, output: { not_found: 100, 'rate.exceeded': 30 } });
    expect(api.seen).toHaveLength(100);
  });
});

describe('createApiProxy (frames as hostile input)', () => {
  const proxy = () => createApiProxy({ tool: tool('api-calls', { api: 'write' }), api: mapApi(), maxCalls: 2 });

  it('malformed frames are rejected outright (the caller kills the process)', () => {
    const p = proxy();
    expect(p.handle('not json')).toBeUndefined();
    expect(p.handle('{"id":"1","op":"getBreadcrumb","args":[]}')).toBeUndefined();
    expect(p.handle('{"id":1,"op":"getBreadcrumb","args":{}}')).toBeUndefined();
    expect(p.handle('[1,2,3]')).toBeUndefined();
  });

  it('unknown methods and extra arguments are refused, and calls are counted', async () => {
    const p = proxy();
    expect(await p.handle('{"id":1,"op":"deleteBreadcrumb","args":["x"]}')).toEqual({
      id: 1,
      ok: false,
      code: 'input.invalid',
      message: 'context.api has no method "deleteBreadcrumb"',
    });
    expect(await p.handle('{"id":2,"op":"getBreadcrumb","args":[1,2,3,4]}')).toEqual({
      id: 2,
      ok: false,
      code: 'input.invalid',
      message: 'context.api.getBreadcrumb: too many arguments (4)',
    });
    await p.handle('{"id":3,"op":"createBreadcrumb","args":[{}]}');
    await p.handle('{"id":4,"op":"createBreadcrumb","args":[{}]}');
    expect(await p.handle('{"id":5,"op":"createBreadcrumb","args":[{}]}')).toEqual({
      id: 5,
      ok: false,
      code: 'rate.exceeded',
      message: 'context.api: more than 2 calls in one execution',
    });
    expect(p.calls).toBe(3);
  });
});
