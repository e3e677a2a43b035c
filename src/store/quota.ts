// Per-agent quotas (docs/store.md "Quotas"): how many records, and how many bytes of context, the
// store keeps of what one agent created — the writer identity the store records as `created_by`
// (the token's subject; verified with auth on). Both backends count the agent's live records in
// the transaction of each create (and of an update of its own record that grows it) and refuse
// the write past a limit with 403 `quota.exceeded`; exempt identities (the runner's own, which
// writes answers, claims and progress) are never counted themselves. What a tool creates for an
// agent is written by the runner with the mark `created-by:agent:<id>`: such a record, when an
// exempt identity wrote it, counts against that agent (a mark another writer sets counts nothing).
// SQLite counts inside its one writer; PostgreSQL takes a per-agent transaction lock first, so
// replicas never overshoot.

import { CHARGED_AGENT_TAG_PREFIX } from '../breadcrumbs/messages.js';
import { HttpError } from '../http.js';
import type { Db } from './db.js';

export { CHARGED_AGENT_TAG_PREFIX };

/** The limits; 0 turns one off. */
export interface AgentQuota {
  records: number;
  bytes: number;
  /** Writer identities never counted (the runner's own). */
  exempt: readonly string[];
}

/**
 * What an agent keeps: live records it created, versions of its kept in history (an update keeps the
 * version it replaces, attributed to that version's writer), and the bytes of its live records'
 * contexts (`size_bytes`).
 */
export interface Usage {
  records: number;
  bytes: number;
}

/** The quota of the store's options; the runner's own identity (`agentId`) is always exempt. */
export function quotaOf(options: {
  agentQuotaRecords?: number | undefined;
  agentQuotaBytes?: number | undefined;
  agentQuotaExempt?: readonly string[] | undefined;
  agentId?: string | undefined;
}): AgentQuota {
  return {
    records: options.agentQuotaRecords ?? 0,
    bytes: options.agentQuotaBytes ?? 0,
    exempt: [...(options.agentQuotaExempt ?? []), ...(options.agentId !== undefined ? [options.agentId] : [])],
  };
}

/** The name a writer is counted under (`created_by`; a write without an identity is `(anonymous)`). */
export function quotaAgent(agentId: string | null): string {
  return agentId ?? '(anonymous)';
}

/**
 * The agent a create counts against: its writer, or — when the writer is exempt (the runner) — the
 * agent its `created-by:agent:<id>` mark names; undefined when the create counts against nobody.
 */
export function chargedAgent(
  quota: AgentQuota | undefined,
  agentId: string | null,
  tags: readonly string[],
): string | null | undefined {
  if (quota === undefined || (quota.records <= 0 && quota.bytes <= 0)) return undefined;
  if (!quota.exempt.includes(agentId ?? '')) return agentId;
  const mark = tags.find((tag) => tag.startsWith(CHARGED_AGENT_TAG_PREFIX) && tag !== CHARGED_AGENT_TAG_PREFIX);
  const agent = mark?.slice(CHARGED_AGENT_TAG_PREFIX.length);
  return agent === undefined || quota.exempt.includes(agent) ? undefined : agent;
}

/**
 * What an update is charged, and to whom: the replaced version's writer keeps one more record (in
 * history), and the writer growing its own record's context keeps the added bytes.
 */
export function updateCharges(
  quota: AgentQuota | undefined,
  row: { created_by: string | null; updated_by: string | null },
  actorId: string | null,
  addedBytes: number,
): Array<[string | null, Usage]> {
  const kept = quotaApplies(quota, row.updated_by) ? row.updated_by : undefined;
  const grows = row.created_by === actorId && addedBytes > 0 && quotaApplies(quota, actorId) ? actorId : undefined;
  if (kept !== undefined && kept === grows) return [[kept, { records: 1, bytes: addedBytes }]];
  const charges: Array<[string | null, Usage]> = [];
  if (kept !== undefined) charges.push([kept, { records: 1, bytes: 0 }]);
  if (grows !== undefined) charges.push([grows, { records: 0, bytes: addedBytes }]);
  return charges;
}

/** Whether writes of `agentId` are counted: a limit is set and the writer is not exempt. */
export function quotaApplies(quota: AgentQuota | undefined, agentId: string | null): quota is AgentQuota {
  return quota !== undefined && (quota.records > 0 || quota.bytes > 0) && !quota.exempt.includes(agentId ?? '');
}

/** Throws 403 `quota.exceeded` when `adding` to what `agentId` keeps (`usage`) passes a limit. */
export function checkQuota(quota: AgentQuota, agentId: string | null, usage: Usage, adding: Usage): void {
  const agent = JSON.stringify(quotaAgent(agentId));
  if (quota.records > 0 && adding.records > 0 && usage.records + adding.records > quota.records)
    throw new HttpError(
      403,
      'quota.exceeded',
      `quota.exceeded: agent ${agent} keeps ${usage.records} records in this store, its quota (--agent-quota-records ${quota.records}); delete some of them or ask the operator to raise the quota`,
      { limit: 'agent-quota-records', agent: quotaAgent(agentId) },
    );
  if (quota.bytes > 0 && adding.bytes > 0 && usage.bytes + adding.bytes > quota.bytes)
    throw new HttpError(
      403,
      'quota.exceeded',
      `quota.exceeded: agent ${agent} keeps ${usage.bytes} bytes of context in this store; ${adding.bytes} more would pass its quota (--agent-quota-bytes ${quota.bytes}); delete some of its records or ask the operator to raise the quota`,
      { limit: 'agent-quota-bytes', agent: quotaAgent(agentId) },
    );
}

/** SQLite's check (run inside the write's transaction): the agent's usage from the writer index and its marks. */
export function sqliteQuotaCheck(
  db: Db,
  quota: AgentQuota | undefined,
): (agent: string | null | undefined, adding: Usage) => void {
  const own =
    db.prepare(`SELECT count(*) + (SELECT count(*) FROM breadcrumb_history WHERE updated_by IS @agent) AS records,
    coalesce(sum(size_bytes), 0) AS bytes FROM breadcrumbs WHERE created_by IS @agent`);
  const marked = db.prepare(`SELECT count(*) AS records, coalesce(sum(b.size_bytes), 0) AS bytes
    FROM breadcrumb_tags t JOIN breadcrumbs b ON b.write_seq = t.write_seq
    WHERE t.tag = ? AND b.created_by IN (SELECT value FROM json_each(?))`);
  return (agent, adding) => {
    if (agent === undefined || quota === undefined) return;
    const mine = own.get({ agent }) as Usage;
    const made =
      agent === null
        ? { records: 0, bytes: 0 }
        : (marked.get(CHARGED_AGENT_TAG_PREFIX + agent, JSON.stringify(quota.exempt)) as Usage);
    checkQuota(quota, agent, { records: mine.records + made.records, bytes: mine.bytes + made.bytes }, adding);
  };
}
