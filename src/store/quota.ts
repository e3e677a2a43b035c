// Per-agent quotas (docs/store.md "Quotas"): how many records, and how many bytes of context, the
// store keeps of what one agent created — the writer identity the store records as `created_by`
// (the token's subject; verified with auth on). Both backends count the agent's live records in
// the transaction of each create (and of an update of its own record that grows it) and refuse
// the write past a limit with 403 `quota.exceeded`; exempt identities (the runner's own, which
// writes answers, claims and what tools create) are never counted. SQLite counts inside its one
// writer; PostgreSQL takes a per-agent transaction lock first, so replicas never overshoot.

import { HttpError } from '../http.js';

/** The limits; 0 turns one off. */
export interface AgentQuota {
  records: number;
  bytes: number;
  /** Writer identities never counted (the runner's own). */
  exempt: readonly string[];
}

/** What an agent keeps: live records it created and the bytes of their contexts (`size_bytes`). */
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
