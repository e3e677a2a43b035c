// Secrets on PostgreSQL, mirroring ../secrets.ts: AES-256-GCM at rest with the same AAD (name +
// scope), so rows are interchangeable with the SQLite store's under the same key; every decrypt
// and value change is audited. Every replica must run with the same `secretsKey`: the first start
// stores an HMAC fingerprint of it in `meta`, and a replica with another key refuses to start.

import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ErrorCode, RunnerError } from '../../errors.js';
import type { SecretsPort } from '../backend.js';
import type { Actor } from '../breadcrumb-writes.js';
import { HttpError, describe, httpErrors } from '../http-util.js';
import { aad, requireString, secretExists, type SecretInfo } from '../secrets.js';
import { isUniqueViolation, transaction } from './db.js';

interface SecretRow extends SecretInfo {
  owner_id: string;
  iv: Buffer;
  ciphertext: Buffer;
  auth_tag: Buffer;
}

/** Records the key's fingerprint on first use; throws config.invalid when the database was set up with another key. */
export async function checkSecretsKey(pool: pg.Pool, key: Buffer): Promise<void> {
  const fingerprint = createHmac('sha256', key).update('tools-runner secrets key check').digest('hex');
  await pool.query("INSERT INTO meta (key, value) VALUES ('secrets_key_check', $1) ON CONFLICT (key) DO NOTHING", [
    fingerprint,
  ]);
  const stored = (await pool.query<{ value: string }>("SELECT value FROM meta WHERE key = 'secrets_key_check'")).rows[0]
    ?.value;
  if (stored !== fingerprint) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      "secretsKey differs from the key this database's secrets are encrypted with: every replica must use the same --secrets-key",
    );
  }
}

/** Builds the secrets repository over `pool` with the 32-byte `key`. */
export function createPgSecrets(pool: pg.Pool, key: Buffer): SecretsPort {
  const encrypt = (value: string, name: string, scopeType: string, scopeId: string | null) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(name, scopeType, scopeId));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return { iv, ciphertext, tag: cipher.getAuthTag() };
  };
  const visible = async (client: pg.Pool | pg.PoolClient, id: string, actor: Actor): Promise<SecretRow> => {
    const row = (await client.query<SecretRow>('SELECT * FROM secrets WHERE id = $1', [id])).rows[0];
    if (!row || (actor.scoped && row.owner_id !== actor.ownerId)) throw httpErrors.notFound(`secret "${id}" not found`);
    return row;
  };
  const audit = (client: pg.PoolClient, row: SecretRow, actor: Actor, reason: string | null) =>
    client.query('INSERT INTO secret_audit (secret_id, owner_id, actor, reason, at) VALUES ($1, $2, $3, $4, $5)', [
      row.id,
      row.owner_id,
      actor.agentId,
      reason,
      new Date().toISOString(),
    ]);

  return {
    async create(body, actor) {
      const name = requireString(body, 'name');
      const scopeType = requireString(body, 'scope_type');
      const rawScopeId = body.scope_id;
      if (rawScopeId !== undefined && rawScopeId !== null && typeof rawScopeId !== 'string') {
        throw httpErrors.invalidBody(`scope_id must be a string or null, got ${describe(rawScopeId)}`);
      }
      const scopeId = (rawScopeId as string | null | undefined) ?? null;
      const value = requireString(body, 'value', true);
      const { iv, ciphertext, tag } = encrypt(value, name, scopeType, scopeId);
      const id = randomUUID();
      try {
        await pool.query(
          `INSERT INTO secrets (id, owner_id, name, scope_type, scope_id, scope_key, iv, ciphertext, auth_tag, created_at, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          [
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
          ],
        );
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        throw secretExists(name, scopeType, scopeId);
      }
      return { id, value };
    },
    async list(scopeType, scopeId, actor) {
      return (
        await pool.query<SecretInfo>(
          `SELECT id, name, scope_type, scope_id, created_at FROM secrets
         WHERE ($1::text IS NULL OR owner_id = $1) AND ($2::text IS NULL OR scope_type = $2) AND ($3::text IS NULL OR scope_key = $3)
         ORDER BY created_at COLLATE "C", name COLLATE "C"`,
          [actor.scoped ? actor.ownerId : null, scopeType ?? null, scopeId ?? null],
        )
      ).rows;
    },
    async decrypt(id, reason, actor) {
      const row = await transaction(pool, async (client) => {
        const found = await visible(client, id, actor);
        await audit(client, found, actor, reason);
        return found;
      });
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
    async remove(id, actor) {
      const row = await visible(pool, id, actor);
      await pool.query('DELETE FROM secrets WHERE id = $1', [row.id]);
    },
    async update(id, value, actor) {
      await transaction(pool, async (client) => {
        const row = await visible(client, id, actor);
        const { iv, ciphertext, tag } = encrypt(value, row.name, row.scope_type, row.scope_id);
        await client.query('UPDATE secrets SET iv = $1, ciphertext = $2, auth_tag = $3 WHERE id = $4', [
          iv,
          ciphertext,
          tag,
          row.id,
        ]);
        await audit(client, row, actor, 'value updated');
      });
    },
  };
}
