// The registries upstream's SDK manages that a single-node store can keep honestly: agents,
// tenants, ACL grants and selector subscriptions (plain tables, owner-scoped like breadcrumbs).
// What they do NOT do here is documented in docs/compat.md: ACL grants are recorded, not
// enforced (owner scoping is this store's only access boundary); selectors deliver nothing extra
// (every stream already receives all of its owner's events; there are no webhooks).

import { randomUUID } from 'node:crypto';
import type { Actor } from './breadcrumb-writes.js';
import type { Db } from './db.js';
import { describe, httpErrors } from './http-util.js';

/** The registry tables. */
export interface Registry {
  upsertAgent(ownerId: string, agentId: string, roles: readonly string[]): void;
  listAgents(actor: Actor): Array<Record<string, unknown>>;
  getAgent(actor: Actor, agentId: string): Record<string, unknown>;
  deleteAgent(actor: Actor, agentId: string): void;
  ensureTenant(id: string, name: string): void;
  listTenants(): Array<Record<string, unknown>>;
  getTenant(id: string): Record<string, unknown>;
  deleteTenant(id: string): void;
  grant(actor: Actor, body: Record<string, unknown>): { id: string };
  revoke(actor: Actor, body: Record<string, unknown>): { rows: number };
  listAcls(actor: Actor): Array<Record<string, unknown>>;
  createSelector(actor: Actor, body: Record<string, unknown>): Record<string, unknown>;
  listSelectors(actor: Actor): Array<Record<string, unknown>>;
  updateSelector(actor: Actor, id: string, body: Record<string, unknown>): void;
  deleteSelector(actor: Actor, id: string): void;
}

/** A required non-empty string field of a JSON body (400 naming it otherwise). */
export function requireText(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '')
    throw httpErrors.invalidBody(`${field} must be a non-empty string, got ${describe(value)}`);
  return value;
}

function stringList(body: Record<string, unknown>, field: string): string[] | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw httpErrors.invalidBody(`${field} must be an array of strings or null, got ${describe(value)}`);
  return value as string[];
}

// A selector as upstream serialises it: every key present, null when unset.
export function selectorOf(body: Record<string, unknown>): Record<string, unknown> {
  const schema = body.schema_name;
  if (schema !== undefined && schema !== null && typeof schema !== 'string')
    throw httpErrors.invalidBody(`schema_name must be a string or null, got ${describe(schema)}`);
  const rules = body.context_match;
  if (rules !== undefined && rules !== null) {
    const ok =
      Array.isArray(rules) &&
      rules.every(
        (r) =>
          r !== null &&
          typeof r === 'object' &&
          typeof (r as { path?: unknown }).path === 'string' &&
          typeof (r as { op?: unknown }).op === 'string' &&
          'value' in r,
      );
    if (!ok) throw httpErrors.invalidBody('context_match must be an array of {path, op, value} or null');
  }
  return {
    any_tags: stringList(body, 'any_tags'),
    all_tags: stringList(body, 'all_tags'),
    schema_name: schema ?? null,
    context_match: rules ?? null,
  };
}

/** Builds the registries over `db`. */
export function createRegistry(db: Db): Registry {
  const now = (): string => new Date().toISOString();
  const agentUpsert = db.prepare(
    'INSERT INTO agents (owner_id, id, roles, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (owner_id, id) DO UPDATE SET roles = excluded.roles',
  );
  const agentList = db.prepare('SELECT id, roles, created_at FROM agents WHERE owner_id = ? ORDER BY created_at, id');
  const agentGet = db.prepare('SELECT id, roles, created_at FROM agents WHERE owner_id = ? AND id = ?');
  const agentDelete = db.prepare('DELETE FROM agents WHERE owner_id = ? AND id = ?');
  const tenantUpsert = db.prepare(
    'INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name',
  );
  const tenantList = db.prepare('SELECT id, name, created_at FROM tenants ORDER BY created_at, id');
  const tenantGet = db.prepare('SELECT id, name, created_at FROM tenants WHERE id = ?');
  const tenantDelete = db.prepare('DELETE FROM tenants WHERE id = ?');
  const aclGet = db.prepare(
    'SELECT id, actions FROM acls WHERE owner_id = ? AND breadcrumb_id = ? AND grantee_agent_id = ?',
  );
  const aclInsert = db.prepare(
    'INSERT INTO acls (id, owner_id, breadcrumb_id, grantee_agent_id, actions, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const aclSet = db.prepare('UPDATE acls SET actions = ? WHERE id = ?');
  const aclDelete = db.prepare('DELETE FROM acls WHERE id = ?');
  const aclList = db.prepare(
    'SELECT id, breadcrumb_id, grantee_agent_id, actions, created_at FROM acls WHERE owner_id = ? ORDER BY created_at, id',
  );
  const selInsert = db.prepare(
    'INSERT INTO selectors (id, owner_id, agent_id, selector, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const selList = db.prepare(
    'SELECT id, owner_id, agent_id, selector FROM selectors WHERE owner_id = ? AND agent_id = ? ORDER BY created_at, id',
  );
  const selUpdate = db.prepare('UPDATE selectors SET selector = ? WHERE id = ? AND owner_id = ? AND agent_id = ?');
  const selDelete = db.prepare('DELETE FROM selectors WHERE id = ? AND owner_id = ? AND agent_id = ?');

  const agentRow = (row: { id: string; roles: string; created_at: string }) => ({
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

  const grantTx = db.transaction((actor: Actor, body: Record<string, unknown>) => {
    const { breadcrumbId, grantee, action } = aclTarget(body);
    const row = aclGet.get(actor.ownerId, breadcrumbId, grantee) as { id: string; actions: string } | undefined;
    if (!row) {
      const id = randomUUID();
      aclInsert.run(id, actor.ownerId, breadcrumbId, grantee, JSON.stringify([action]), now());
      return { id };
    }
    const actions = JSON.parse(row.actions) as string[];
    if (!actions.includes(action)) aclSet.run(JSON.stringify([...actions, action]), row.id);
    return { id: row.id };
  });
  const revokeTx = db.transaction((actor: Actor, body: Record<string, unknown>) => {
    const { breadcrumbId, grantee, action } = aclTarget(body);
    const row = aclGet.get(actor.ownerId, breadcrumbId, grantee) as { id: string; actions: string } | undefined;
    const actions = row ? (JSON.parse(row.actions) as string[]) : [];
    if (!row || !actions.includes(action)) return { rows: 0 };
    const rest = actions.filter((a) => a !== action);
    if (rest.length === 0) aclDelete.run(row.id);
    else aclSet.run(JSON.stringify(rest), row.id);
    return { rows: 1 };
  });

  return {
    upsertAgent: (ownerId, agentId, roles) => void agentUpsert.run(ownerId, agentId, JSON.stringify(roles), now()),
    listAgents: (actor) =>
      (agentList.all(actor.ownerId) as Array<{ id: string; roles: string; created_at: string }>).map(agentRow),
    getAgent(actor, agentId) {
      const row = agentGet.get(actor.ownerId, agentId) as { id: string; roles: string; created_at: string } | undefined;
      if (!row) throw httpErrors.notFound(`agent not found: no agent "${agentId}"`);
      return agentRow(row);
    },
    deleteAgent: (actor, agentId) => void agentDelete.run(actor.ownerId, agentId),
    ensureTenant: (id, name) => void tenantUpsert.run(id, name, now()),
    listTenants: () => tenantList.all() as Array<Record<string, unknown>>,
    getTenant(id) {
      const row = tenantGet.get(id) as Record<string, unknown> | undefined;
      if (!row) throw httpErrors.notFound(`tenant not found: no tenant "${id}"`);
      return row;
    },
    deleteTenant: (id) => void tenantDelete.run(id),
    grant: (actor, body) => grantTx(actor, body),
    revoke: (actor, body) => revokeTx(actor, body),
    listAcls: (actor) =>
      (aclList.all(actor.ownerId) as Array<Record<string, unknown> & { actions: string }>).map((row) => ({
        ...row,
        actions: JSON.parse(row.actions) as unknown,
      })),
    createSelector(actor, body) {
      const selector = selectorOf(body);
      const id = randomUUID();
      selInsert.run(id, actor.ownerId, agentOf(actor), JSON.stringify(selector), now());
      return { id, owner_id: actor.ownerId, agent_id: agentOf(actor), selector };
    },
    listSelectors: (actor) =>
      (
        selList.all(actor.ownerId, agentOf(actor)) as Array<{
          id: string;
          owner_id: string;
          agent_id: string;
          selector: string;
        }>
      ).map((row) => ({
        ...row,
        selector: JSON.parse(row.selector) as unknown,
      })),
    updateSelector(actor, id, body) {
      const changed = selUpdate.run(JSON.stringify(selectorOf(body)), id, actor.ownerId, agentOf(actor)).changes;
      if (changed === 0) throw httpErrors.notFound(`not found: no selector "${id}" of this agent`);
    },
    deleteSelector: (actor, id) => void selDelete.run(id, actor.ownerId, agentOf(actor)),
  };
}
