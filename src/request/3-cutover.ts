// The answer-tag cutover: since when the runner's answers carry unforgeable answer tags.
//
// Answers written before (by an older runner) are recognised only by their `request:<rid>` tag —
// which anyone can write. So that an upgrade never re-runs every request answered before it, a
// request last changed before the cutover counts as answered when such a legacy response exists;
// for every later request only the answer tag counts. The cutover is a `tool.runner.state.v1`
// record with a MAC under the runner secret (the earliest valid one wins; forged ones are ignored).

import type { StoreClient } from '../breadcrumbs/index.js';
import { sameText, type RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Logger } from '../logger.js';

const STATE_SCHEMA = 'tool.runner.state.v1';
const KIND = 'answer-tags-since';

/** Reads (or records, on the first start) the cutover; returns it in epoch ms. */
export async function loadAnswerTagCutover(options: { client: StoreClient; keys: RequestKeys; workspace: string; logger: Logger }): Promise<number> {
  const { client, keys, workspace, logger } = options;
  const items = await client.listAll({ schema_name: STATE_SCHEMA, tag: workspace, include_context: true, limit: 100 });
  let earliest: number | undefined;
  for (const item of items) {
    const since = item.context?.['since'];
    if (item.context?.['kind'] !== KIND || typeof since !== 'string') continue;
    if (!sameText(keys.stateMac(KIND, since), item.context['mac'])) continue;
    const ms = Date.parse(since);
    if (Number.isFinite(ms) && (earliest === undefined || ms < earliest)) earliest = ms;
  }
  if (earliest !== undefined) return earliest;
  const since = new Date().toISOString();
  await client.createBreadcrumb({ title: 'tools-runner: answer tags since', schema_name: STATE_SCHEMA, tags: [workspace, 'tool:runner-state'], context: { kind: KIND, since, mac: keys.stateMac(KIND, since) } });
  logger.info('recorded the answer-tag cutover', { since });
  return Date.parse(since);
}
