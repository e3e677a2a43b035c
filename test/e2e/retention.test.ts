// A run with a short retention (--retention-ms 3000) on the embedded store: every request is
// answered, no answer disappears before the retention has passed since it was written, and once the
// calls stop the finished requests and answers are all removed — the data stays bounded. The tool
// itself is kept (retention never touches tool definitions).

import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  client,
  putTool,
  request,
  startRunnerWithStore,
  toolContext,
  waitForResponses,
  WS,
} from './harness.js';

afterEach(cleanupAll);

const RETENTION_MS = 3000;
const ECHO = toolContext('e2e-echo', 'export async function execute(input) { return { echoed: input }; }');

describe('retention', () => {
  it('a short retention removes finished calls, never an answer before its retention has passed', async () => {
    const { url } = await startRunnerWithStore(['--retention-ms', String(RETENTION_MS)]);
    const c = client(url);
    const tool = await putTool(c, ECHO);
    const rids = await Promise.all(Array.from({ length: 40 }, (_, i) => request(c, 'e2e-echo', { i })));
    const responses = await waitForResponses(c, rids, 120_000);
    expect(rids.filter((rid) => responses.get(rid)?.length !== 1)).toEqual([]);
    // Watch the answers until they are gone: each one seen must be gone no earlier than its retention.
    const written = new Map<string, number>();
    const early: string[] = [];
    const deadline = Date.now() + 120_000;
    for (;;) {
      const answers = await c.listAll({ schema_name: 'tool.response.v1', tag: WS });
      const now = Date.now();
      const present = new Set(answers.map((a) => a.id));
      for (const answer of answers) if (!written.has(answer.id)) written.set(answer.id, Date.parse(answer.updated_at));
      for (const [id, at] of written) {
        if (!present.has(id) && now - at < RETENTION_MS) early.push(id);
      }
      const requests = await c.listAll({ schema_name: 'tool.request.v1', tag: WS });
      if (answers.length === 0 && requests.length === 0) break;
      if (Date.now() > deadline)
        throw new Error(`still kept after 120 s: ${answers.length} answers, ${requests.length} requests`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(early).toEqual([]);
    expect(written.size).toBe(40);
    // Only what retention covers went: the tool definition is still there.
    expect((await c.getBreadcrumb(tool)).context['name']).toBe('e2e-echo');
    const metrics = await fetch(`${url}/metrics`).then((r) => r.text());
    expect(Number(/^tools_runner_store_retention_removed_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(80);
  });
});
