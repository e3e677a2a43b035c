// The answer-tag cutover: since when the runner's answers carry unforgeable answer tags — loaded
// once at startup, and the one check every part of the request path asks.
//
// Answers written before (by an older runner) are recognised only by their `request:<rid>` tag —
// which anyone can write. So that an upgrade never re-runs every request answered before it, a
// request written before the cutover counts as answered when such a legacy response exists;
// for every later request only the answer tag counts. The cutover is a `tool.runner.state.v1`
// record with a MAC under the runner secret (the earliest valid one wins; forged ones are ignored).

import type { StoreClient } from '../breadcrumbs/index.js';
import { SCHEMA, TAG } from '../breadcrumbs/messages.js';
import { sameText, type RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Logger } from '../logger.js';

const STATE_SCHEMA = 'tool.runner.state.v1';
const KIND = 'answer-tags-since';

/** The cutover, as intake's scans and the job ask it. */
export interface Cutover {
  /** Epoch ms; 0 = no request predates it. */
  readonly ms: number;
  /**
   * Whether the request was written before the cutover (so a legacy `request:<rid>` answer counts):
   * `created_at` when the record has it (the job's read), else `updated_at` (a listed item: a scan
   * skips only what surely predates it; the job decides on `created_at`).
   */
  predates(record: { created_at?: string | undefined; updated_at?: string | undefined }): boolean;
  /** The job's check: the request predates the cutover and an older runner's `request:<rid>` answer exists. */
  answeredByOlderRunner(
    record: { created_at?: string | undefined; updated_at?: string | undefined },
    rid: string,
  ): Promise<boolean>;
}

/** The cutover at `ms` (tests: 0, nothing predates it). */
export function cutoverAt(client: Pick<StoreClient, 'listBreadcrumbs'>, ms: number): Cutover {
  const predates: Cutover['predates'] = (record) => {
    const at = record.created_at ?? record.updated_at;
    return ms > 0 && at !== undefined && Date.parse(at) < ms;
  };
  return {
    ms,
    predates,
    async answeredByOlderRunner(record, rid) {
      if (!predates(record)) return false;
      const legacy = await client.listBreadcrumbs({
        schema_name: SCHEMA.ToolResponse,
        tag: TAG.request(rid),
        limit: 1,
      });
      return legacy.length > 0;
    },
  };
}

/** Reads (or records, on the first start) the cutover. */
export async function loadAnswerTagCutover(options: {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  logger: Logger;
}): Promise<Cutover> {
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
  if (earliest !== undefined) return cutoverAt(client, earliest);
  const since = new Date().toISOString();
  await client.createBreadcrumb({
    title: 'tools-runner: answer tags since',
    schema_name: STATE_SCHEMA,
    tags: [workspace, 'tool:runner-state'],
    context: { kind: KIND, since, mac: keys.stateMac(KIND, since) },
  });
  logger.info('recorded the answer-tag cutover', { since });
  return cutoverAt(client, Date.parse(since));
}
