// The registries (agents, tenants, ACL grants, selectors) on PostgreSQL, mirroring ../registry.ts
// (same shapes, same not-enforced semantics documented in docs/compat.md). Orders use the C
// collation so listings sort exactly as SQLite's byte order does.

import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { RegistryPort } from '../backend.js';
import type { Actor } from '../breadcrumb-writes.js';
import { httpErrors } from '../http-util.js';
import { requireText, selectorOf } from '../registry.js';
import { transaction } from './db.js';

type AgentRow = { id: string; roles: string; created_at: string };

/** Builds the registries over `pool`. */
export function createPgRegistry(pool: pg.Pool): RegistryPort {
  const now = (): string => new Date().toISOString();
  const agentRow = (row: AgentRow) => ({
    id: row.id,
    roles: JSON.parse(row.roles) as unknown,
    created_at: row.created_at,
  });
  const agentOf = (actor: Actor): string => actor.agentId ?? '00000000-0000-0000-0000-000000000000';
  const aclTarget = (body: Record<string, unknown>) => ({
    breadcrumbId: requireText(body, 'breadcrumb_id'),
    grantee: requireText(body, 'grantee_agent_id'),
    action: requireText(body, 'action'),
  });
  const aclRow = (client: pg.PoolClient, actor: Actor, breadcrumbId: string, grantee: string) =>
    client.query<{ id: string; actions: string }>(
      'SELECT id, actions FROM acls WHERE owner_id = $1 AND breadcrumb_id = $2 AND grantee_agent_id = $3 FOR UPDATE',
      [actor.ownerId, breadcrumbId, grantee],
    );

  return {
    async upsertAgent(ownerId, agentId, roles) {
      await pool.query(
        'INSERT INTO agents (owner_id, id, roles, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (owner_id, id) DO UPDATE SET roles = excluded.roles',
        [ownerId, agentId, JSON.stringify(roles), now()],
      );
    },
    async listAgents(actor) {
      return (
        await pool.query<AgentRow>(
          'SELECT id, roles, created_at FROM agents WHERE owner_id = $1 ORDER BY created_at COLLATE "C", id COLLATE "C"',
          [actor.ownerId],
        )
      ).rows.map(agentRow);
    },
    async getAgent(actor, agentId) {
      const row = (
        await pool.query<AgentRow>('SELECT id, roles, created_at FROM agents WHERE owner_id = $1 AND id = $2', [
          actor.ownerId,
          agentId,
        ])
      ).rows[0];
      if (!row) throw httpErrors.notFound(`agent not found: no agent "${agentId}"`);
      return agentRow(row);
    },
    async deleteAgent(actor, agentId) {
      await pool.query('DELETE FROM agents WHERE owner_id = $1 AND id = $2', [actor.ownerId, agentId]);
    },
    async ensureTenant(id, name) {
      await pool.query(
        'INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET name = excluded.name',
        [id, name, now()],
      );
    },
    async listTenants() {
      return (
        await pool.query('SELECT id, name, created_at FROM tenants ORDER BY created_at COLLATE "C", id COLLATE "C"')
      ).rows as Array<Record<string, unknown>>;
    },
    async getTenant(id) {
      const row = (await pool.query('SELECT id, name, created_at FROM tenants WHERE id = $1', [id])).rows[0] as
        | Record<string, unknown>
        | undefined;
      if (!row) throw httpErrors.notFound(`tenant not found: no tenant "${id}"`);
      return row;
    },
    async deleteTenant(id) {
      await pool.query('DELETE FROM tenants WHERE id = $1', [id]);
    },
    grant: (actor, body) =>
      transaction(pool, async (client) => {
        const { breadcrumbId, grantee, action } = aclTarget(body);
        // A concurrent first grant of the same pair: the loser's insert does nothing, then it reads the winner's row.
        const id = randomUUID();
        await client.query(
          'INSERT INTO acls (id, owner_id, breadcrumb_id, grantee_agent_id, actions, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (owner_id, breadcrumb_id, grantee_agent_id) DO NOTHING',
          [id, actor.ownerId, breadcrumbId, grantee, JSON.stringify([action]), now()],
        );
        const row = (await aclRow(client, actor, breadcrumbId, grantee)).rows[0] as { id: string; actions: string };
        const actions = JSON.parse(row.actions) as string[];
        if (!actions.includes(action))
          await client.query('UPDATE acls SET actions = $1 WHERE id = $2', [
            JSON.stringify([...actions, action]),
            row.id,
          ]);
        return { id: row.id };
      }),
    revoke: (actor, body) =>
      transaction(pool, async (client) => {
        const { breadcrumbId, grantee, action } = aclTarget(body);
        const row = (await aclRow(client, actor, breadcrumbId, grantee)).rows[0];
        const actions = row ? (JSON.parse(row.actions) as string[]) : [];
        if (!row || !actions.includes(action)) return { rows: 0 };
        const rest = actions.filter((a) => a !== action);
        if (rest.length === 0) await client.query('DELETE FROM acls WHERE id = $1', [row.id]);
        else await client.query('UPDATE acls SET actions = $1 WHERE id = $2', [JSON.stringify(rest), row.id]);
        return { rows: 1 };
      }),
    async listAcls(actor) {
      const rows = (
        await pool.query<Record<string, unknown> & { actions: string }>(
          'SELECT id, breadcrumb_id, grantee_agent_id, actions, created_at FROM acls WHERE owner_id = $1 ORDER BY created_at COLLATE "C", id COLLATE "C"',
          [actor.ownerId],
        )
      ).rows;
      return rows.map((row) => ({ ...row, actions: JSON.parse(row.actions) as unknown }));
    },
    async createSelector(actor, body) {
      const selector = selectorOf(body);
      const id = randomUUID();
      await pool.query(
        'INSERT INTO selectors (id, owner_id, agent_id, selector, created_at) VALUES ($1, $2, $3, $4, $5)',
        [id, actor.ownerId, agentOf(actor), JSON.stringify(selector), now()],
      );
      return { id, owner_id: actor.ownerId, agent_id: agentOf(actor), selector };
    },
    async listSelectors(actor) {
      const rows = (
        await pool.query<{ id: string; owner_id: string; agent_id: string; selector: string }>(
          'SELECT id, owner_id, agent_id, selector FROM selectors WHERE owner_id = $1 AND agent_id = $2 ORDER BY created_at COLLATE "C", id COLLATE "C"',
          [actor.ownerId, agentOf(actor)],
        )
      ).rows;
      return rows.map((row) => ({ ...row, selector: JSON.parse(row.selector) as unknown }));
    },
    async updateSelector(actor, id, body) {
      const changed = (
        await pool.query('UPDATE selectors SET selector = $1 WHERE id = $2 AND owner_id = $3 AND agent_id = $4', [
          JSON.stringify(selectorOf(body)),
          id,
          actor.ownerId,
          agentOf(actor),
        ])
      ).rowCount;
      if (changed === 0) throw httpErrors.notFound(`not found: no selector "${id}" of this agent`);
    },
    async deleteSelector(actor, id) {
      await pool.query('DELETE FROM selectors WHERE id = $1 AND owner_id = $2 AND agent_id = $3', [
        id,
        actor.ownerId,
        agentOf(actor),
      ]);
    },
  };
}
