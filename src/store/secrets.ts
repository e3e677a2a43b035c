// Secrets of the embedded store: AES-256-GCM at rest (random 12-byte IV per value, name+scope as
// additional authenticated data, so a ciphertext cannot be moved to another secret's row), every
// decrypt written to an audit table, values never logged and never returned by listings.

import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import type { Actor } from './breadcrumb-writes.js';
import { HttpError, describe, httpErrors } from './http-util.js';

/** A secret as listed (never its value). */
export interface SecretInfo {
  id: string;
  name: string;
  scope_type: string;
  scope_id: string | null;
  created_at: string;
}

/** The secrets table and its audit trail. */
export interface SecretsRepo {
  create(body: Record<string, unknown>, actor: Actor): { id: string; value: string };
  list(scopeType: string | undefined, scopeId: string | undefined, actor: Actor): SecretInfo[];
  decrypt(id: string, reason: string | null, actor: Actor): string;
  remove(id: string, actor: Actor): void;
  /** Replaces the value of secret `id` (upstream's `PUT /secrets/:id`). */
  update(id: string, value: string, actor: Actor): void;
}

interface SecretRow extends SecretInfo {
  owner_id: string;
  iv: Buffer;
  ciphertext: Buffer;
  auth_tag: Buffer;
}

export function aad(name: string, scopeType: string, scopeId: string | null): Buffer {
  return Buffer.from(JSON.stringify([name, scopeType, scopeId]));
}

/** The 409 for a second secret of one name in one scope (both backends). */
export function secretExists(name: string, scopeType: string, scopeId: string | null): HttpError {
  const scope = `${scopeType}${scopeId === null ? '' : ':' + scopeId}`;
  return new HttpError(
    409,
    'conflict',
    `a secret named ${JSON.stringify(name)} already exists in scope ${scope}; change its value with PUT /secrets/<id>`,
  );
}

export function requireString(body: Record<string, unknown>, field: string, allowEmpty = false): string {
  const value = body[field];
  if (typeof value !== 'string' || (!allowEmpty && value === '')) {
    throw httpErrors.invalidBody(`${field} must be a ${allowEmpty ? '' : 'non-empty '}string, got ${describe(value)}`);
  }
  return value;
}

/** Builds the secrets repository over `db` with the 32-byte `key`. */
export function createSecretsRepo(db: Db, key: Buffer): SecretsRepo {
  const insert =
    db.prepare(`INSERT INTO secrets (id, owner_id, name, scope_type, scope_id, scope_key, iv, ciphertext, auth_tag, created_at, created_by)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const exists = db
    .prepare('SELECT 1 FROM secrets WHERE owner_id = ? AND name = ? AND scope_type = ? AND scope_key = ?')
    .pluck();
  const byId = db.prepare('SELECT * FROM secrets WHERE id = ?');
  const listAll = db.prepare(`SELECT id, name, scope_type, scope_id, created_at FROM secrets
    WHERE (@owner IS NULL OR owner_id = @owner) AND (@type IS NULL OR scope_type = @type) AND (@sid IS NULL OR scope_key = @sid)
    ORDER BY created_at, name`);
  const audit = db.prepare('INSERT INTO secret_audit (secret_id, owner_id, actor, reason, at) VALUES (?, ?, ?, ?, ?)');
  const deleteRow = db.prepare('DELETE FROM secrets WHERE id = ?');
  const setValue = db.prepare('UPDATE secrets SET iv = ?, ciphertext = ?, auth_tag = ? WHERE id = ?');
  const encrypt = (value: string, name: string, scopeType: string, scopeId: string | null) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(name, scopeType, scopeId));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return { iv, ciphertext, tag: cipher.getAuthTag() };
  };

  const visible = (id: string, actor: Actor): SecretRow => {
    const row = byId.get(id) as SecretRow | undefined;
    if (!row || (actor.scoped && row.owner_id !== actor.ownerId)) throw httpErrors.notFound(`secret "${id}" not found`);
    return row;
  };

  const createTx = db.transaction((body: Record<string, unknown>, actor: Actor) => {
    const name = requireString(body, 'name');
    const scopeType = requireString(body, 'scope_type');
    const rawScopeId = body.scope_id;
    if (rawScopeId !== undefined && rawScopeId !== null && typeof rawScopeId !== 'string') {
      throw httpErrors.invalidBody(`scope_id must be a string or null, got ${describe(rawScopeId)}`);
    }
    const scopeId = (rawScopeId as string | null | undefined) ?? null;
    const value = requireString(body, 'value', true);
    if (exists.get(actor.ownerId, name, scopeType, scopeId ?? '')) {
      throw secretExists(name, scopeType, scopeId);
    }
    const { iv, ciphertext, tag } = encrypt(value, name, scopeType, scopeId);
    const id = randomUUID();
    insert.run(
      id,
      actor.ownerId,
      name,
      scopeType,
      scopeId,
      scopeId ?? '',
      iv,
      ciphertext,
      tag,
      new Date().toISOString(),
      actor.agentId,
    );
    return { id, value };
  });

  const decryptTx = db.transaction((id: string, reason: string | null, actor: Actor) => {
    const row = visible(id, actor);
    audit.run(row.id, row.owner_id, actor.agentId, reason, new Date().toISOString());
    return row;
  });

  return {
    create: (body, actor) => createTx(body, actor),
    list(scopeType, scopeId, actor) {
      return listAll.all({
        owner: actor.scoped ? actor.ownerId : null,
        type: scopeType ?? null,
        sid: scopeId ?? null,
      }) as SecretInfo[];
    },
    decrypt(id, reason, actor) {
      const row = decryptTx(id, reason, actor);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, row.iv);
        decipher.setAAD(aad(row.name, row.scope_type, row.scope_id));
        decipher.setAuthTag(row.auth_tag);
        return Buffer.concat([decipher.update(row.ciphertext), decipher.final()]).toString('utf8');
      } catch {
        throw new HttpError(
          500,
          'decrypt_failed',
          `secret "${id}" cannot be decrypted with the configured secrets key (was the key changed?)`,
        );
      }
    },
    remove(id, actor) {
      deleteRow.run(visible(id, actor).id);
    },
    update(id, value, actor) {
      const row = visible(id, actor);
      const { iv, ciphertext, tag } = encrypt(value, row.name, row.scope_type, row.scope_id);
      setValue.run(iv, ciphertext, tag, row.id);
      audit.run(row.id, row.owner_id, actor.agentId, 'value updated', new Date().toISOString());
    },
  };
}
