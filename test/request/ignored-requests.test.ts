// What makes a record "meant as a request" that this runner will never answer (src/request/ignored-requests.ts):
// the table of cases, near-miss hints, and the bound on how much a flood of them can log.

import { describe, expect, it } from 'vitest';
import type { StoreEvent } from '../../src/breadcrumbs/messages.js';
import { createLogger } from '../../src/logger.js';
import { createIgnoredRequestLog, ignoredRequestOf, isNearMiss } from '../../src/request/ignored-requests.js';

const WS = 'workspace:tools';
const event = (schema: string | null, tags: string[], version = 1): StoreEvent => ({
  type: 'breadcrumb.updated',
  breadcrumb_id: 'b-1',
  version,
  schema_name: schema,
  tags,
  context: { tool: 'echo', input: {} },
});

describe('ignoredRequestOf', () => {
  it.each<[string, StoreEvent, ReturnType<typeof ignoredRequestOf>]>([
    ['a request of this workspace (runs)', event('tool.request.v1', ['tool:request', WS]), undefined],
    [
      'no workspace tag',
      event('tool.request.v1', ['tool:request']),
      { reason: 'no-workspace', hint: `add the tag "${WS}"` },
    ],
    [
      'another workspace',
      event('tool.request.v1', ['tool:request', 'workspace:billing']),
      { reason: 'other-workspace' },
    ],
    [
      'a near-miss workspace',
      event('tool.request.v1', ['tool:request', 'workspace:tool']),
      { reason: 'other-workspace', hint: `tag "workspace:tool" is not this runner's "${WS}"` },
    ],
    [
      'a workspace in other case',
      event('tool.request.v1', ['tool:request', 'Workspace:Tools']),
      { reason: 'other-workspace', hint: `tag "Workspace:Tools" is not this runner's "${WS}"` },
    ],
    [
      'no tool:request tag',
      event('tool.request.v1', [WS]),
      { reason: 'no-request-tag', hint: 'add the tag "tool:request"' },
    ],
    [
      'a near-miss tool:request tag',
      event('tool.request.v1', [WS, 'tool:requests']),
      { reason: 'no-request-tag', hint: 'tag "tool:requests" should be "tool:request"' },
    ],
    [
      'a schema typo',
      event('tool.reqest.v1', ['tool:request', WS]),
      { reason: 'schema-typo', hint: 'schema_name must be "tool.request.v1"' },
    ],
    [
      'a transposition',
      event('tool.rqeuest.v1', []),
      { reason: 'schema-typo', hint: 'schema_name must be "tool.request.v1"' },
    ],
    [
      'another version',
      event('tool.request.v2', [WS]),
      { reason: 'schema-typo', hint: 'schema_name must be "tool.request.v1"' },
    ],
    [
      'upper case',
      event('Tool.Request.V1', [WS]),
      { reason: 'schema-typo', hint: 'schema_name must be "tool.request.v1"' },
    ],
    ['a response (unrelated)', event('tool.response.v1', [WS]), undefined],
    ['a create request (unrelated)', event('tool.create.request.v1', [WS]), undefined],
    ['a note (unrelated)', event('note.v1', [WS]), undefined],
    ['no schema', event(null, ['tool:request']), undefined],
    [
      'a later version of a record (logged once, at creation)',
      event('tool.request.v1', ['tool:request'], 2),
      undefined,
    ],
  ])('%s', (_what, input, expected) => {
    expect(ignoredRequestOf(input, WS)).toEqual(expected);
  });

  it('a deletion or a ping is never a request', () => {
    expect(
      ignoredRequestOf({ type: 'breadcrumb.deleted', breadcrumb_id: 'x', schema_name: 'tool.request.v1' }, WS),
    ).toBeUndefined();
    expect(ignoredRequestOf({ type: 'ping' }, WS)).toBeUndefined();
  });

  it('isNearMiss: at most two edits, case and blanks; never the value itself; long values are not compared', () => {
    expect(isNearMiss('tool.request.v1', 'tool.request.v1')).toBe(false);
    expect(isNearMiss(' tool.request.v1 ', 'tool.request.v1')).toBe(true);
    expect(isNearMiss('tool.rest.v1', 'tool.request.v1')).toBe(false);
    expect(isNearMiss('x'.repeat(100_000), 'tool.request.v1')).toBe(false);
  });
});

describe('the ignored-request log', () => {
  it('counts every one, logs at most 20 a minute, and says in the next minute how many went unlogged', () => {
    let now = 0;
    const lines: string[] = [];
    const counted: string[] = [];
    const log = createIgnoredRequestLog({
      logger: createLogger({ write: (l) => lines.push(l) }),
      workspace: WS,
      count: (r) => counted.push(r),
      now: () => now,
    });
    for (let i = 0; i < 1000; i++) log(event('tool.request.v1', ['tool:request']));
    log(event('note.v1', ['tool:request']));
    expect(counted).toHaveLength(1000);
    expect(lines).toHaveLength(20);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'info',
      msg: 'request ignored',
      reason: 'no-workspace',
      breadcrumbId: 'b-1',
      tool: 'echo',
      workspace: WS,
    });
    now += 60_000;
    log(event('tool.reqest.v1', []));
    expect(lines).toHaveLength(22);
    expect(JSON.parse(lines[20] as string)).toMatchObject({
      msg: 'ignored requests not logged (too many)',
      count: 980,
    });
    expect(JSON.parse(lines[21] as string)).toMatchObject({ reason: 'schema-typo' });
  });
});
