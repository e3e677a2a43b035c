// Upgrading from a runner whose answers carried only `request:<rid>` tags: requests answered before
// the first start of this version are not run again; a request that arrives later is not silenced
// by such a (forgeable) legacy-style response.

import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { until, untilSettled } from '../support/waits.js';
import {
  adminUrl,
  cleanupAll,
  client,
  putTool,
  startRunner,
  startStoreProcess,
  tempDir,
  toolContext,
  WS,
} from './harness.js';

afterAll(cleanupAll);

const legacyResponse = (rid: string) => ({
  title: 'Response: u-count',
  schema_name: SCHEMA.ToolResponse,
  tags: [WS, TAG.Response, TAG.request(rid)],
  context: {
    request_id: rid,
    tool: 'u-count',
    status: 'success',
    output: { legacy: true },
    execution_time_ms: 1,
    metadata: {},
    timestamp: new Date().toISOString(),
  },
});

describe('answer-tag cutover', () => {
  it('does not re-run requests answered before the upgrade, and runs later ones despite legacy-style junk', async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = client(url);
    await putTool(
      c,
      toolContext(
        'u-count',
        `export async function execute(input, context) {
        await context.api.createBreadcrumb({ title: 'exec', schema_name: 'e2e.exec.v1', tags: ['exec:' + input.mark], context: {} });
        return { ran: true };
      }`,
        { permissions: { net: false, api: 'write' } },
      ),
    );
    // History written by an older runner: requests with their (tag-only) answers.
    const oldIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const rid = `old-${i}`;
      oldIds.push(
        (
          await c.createBreadcrumb({
            title: 'Request: u-count',
            schema_name: SCHEMA.ToolRequest,
            tags: [TAG.Request, WS],
            context: { tool: 'u-count', input: { mark: 'old' }, requestId: rid },
          })
        ).id,
      );
      await c.createBreadcrumb(legacyResponse(rid));
    }
    const admin = await adminUrl(await startRunner(url, ['--admin-port', '0'], { TOOLS_RUNNER_LOG_LEVEL: 'info' }));
    // Touching an old request (an update event) does not make it run again either.
    await c.updateBreadcrumb(oldIds[0]!, { title: 'Request: u-count (edited)' });
    // A new request, pre-empted by a forged legacy-style answer.
    await c.createBreadcrumb(legacyResponse('new-1'));
    await c.createBreadcrumb({
      title: 'Request: u-count',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS],
      context: { tool: 'u-count', input: { mark: 'new' }, requestId: 'new-1' },
    });
    await until(
      'the new request run',
      async () => (await c.listBreadcrumbs({ tag: 'exec:new', limit: 10 })).length > 0,
    );
    expect(await c.listBreadcrumbs({ tag: 'exec:new', limit: 10 })).toHaveLength(1);
    // Two scans later, with the queue idle, no old request has run.
    await untilSettled(admin);
    expect(await c.listBreadcrumbs({ tag: 'exec:old', limit: 10 })).toHaveLength(0);
  });
});
