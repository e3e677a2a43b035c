import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect, it } from 'vitest';
import { call, captureLogger, startStore, tempDir, describeBackends } from './helpers.js';

const VALUE = 'PLAINTEXT-secret-value-7f3a9c';

describeBackends('store: secrets', () => {
  it('round-trips a value, lists without values, filters by scope, 409 on a duplicate, deletes', async () => {
    const store = await startStore();
    const created = await call(store.url, 'POST', '/secrets', {
      body: { name: 'API_KEY', scope_type: 'agent', scope_id: 'a1', value: VALUE },
    });
    expect(created).toMatchObject({ status: 200, body: { id: expect.any(String) } });
    await call(store.url, 'POST', '/secrets', { body: { name: 'API_KEY', scope_type: 'global', value: 'other' } });
    const dup = await call(store.url, 'POST', '/secrets', {
      body: { name: 'API_KEY', scope_type: 'agent', scope_id: 'a1', value: 'x' },
    });
    expect(dup).toMatchObject({
      status: 409,
      body: {
        code: 'conflict',
        error: 'a secret named "API_KEY" already exists in scope agent:a1; change its value with PUT /secrets/<id>',
      },
    });
    const listed = await call(store.url, 'GET', '/secrets?scope_type=agent&scope_id=a1');
    expect(listed.body).toEqual([
      { id: created.body.id, name: 'API_KEY', scope_type: 'agent', scope_id: 'a1', created_at: expect.any(String) },
    ]);
    expect((await call(store.url, 'GET', '/secrets')).body).toHaveLength(2);
    expect(JSON.stringify((await call(store.url, 'GET', '/secrets')).body)).not.toContain(VALUE);
    const decrypted = await call(store.url, 'POST', `/secrets/${created.body.id}/decrypt`, {
      body: { reason: 'tool weather needs it' },
    });
    expect(decrypted).toMatchObject({ status: 200, body: { value: VALUE } });
    expect((await call(store.url, 'POST', `/secrets/${created.body.id}/decrypt`, { raw: '' })).body).toEqual({
      value: VALUE,
    });
    expect(await call(store.url, 'DELETE', `/secrets/${created.body.id}`)).toMatchObject({
      status: 200,
      body: { ok: true },
    });
    expect((await call(store.url, 'POST', `/secrets/${created.body.id}/decrypt`, { body: {} })).status).toBe(404);
  });

  it('never stores the value in plaintext (db, WAL), audits every decrypt, never logs the value', async () => {
    const dir = tempDir();
    const capture = captureLogger();
    const store = await startStore({ dataDir: dir, logger: capture.logger });
    const {
      body: { id },
    } = await call(store.url, 'POST', '/secrets', { body: { name: 'TOKEN', scope_type: 'global', value: VALUE } });
    await call(store.url, 'POST', `/secrets/${id}/decrypt`, { body: { reason: 'first' } });
    await call(store.url, 'POST', `/secrets/${id}/decrypt`, { body: {} });
    const scan = (): string[] => {
      const files = readdirSync(dir).filter((f) => f.startsWith('store.db'));
      expect(files).toContain('store.db');
      return files.filter((f) => readFileSync(join(dir, f)).includes(Buffer.from(VALUE)));
    };
    expect(readdirSync(dir)).toContain('store.db-wal');
    expect(scan()).toEqual([]);
    await store.close();
    expect(scan()).toEqual([]);
    const db = new Database(join(dir, 'store.db'), { readonly: true });
    const audit = db.prepare('SELECT secret_id, actor, reason, at FROM secret_audit ORDER BY id').all();
    const row = db.prepare('SELECT length(iv) AS iv, length(ciphertext) AS ct FROM secrets').get();
    db.close();
    expect(audit).toEqual([
      { secret_id: id, actor: null, reason: 'first', at: expect.any(String) },
      { secret_id: id, actor: null, reason: null, at: expect.any(String) },
    ]);
    expect(row).toEqual({ iv: 12, ct: Buffer.byteLength(VALUE) });
    expect(capture.lines.length).toBeGreaterThan(0);
    expect(JSON.stringify(capture.lines)).not.toContain(VALUE);
  });

  it('generates <dataDir>/secrets.key (0600) once and reuses it after a restart', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    const {
      body: { id },
    } = await call(first.url, 'POST', '/secrets', { body: { name: 'N', scope_type: 'global', value: VALUE } });
    await first.close();
    const keyFile = join(dir, 'secrets.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = readFileSync(keyFile, 'utf8');
    expect(key.trim()).toMatch(/^[0-9a-f]{64}$/);
    const second = await startStore({ dataDir: dir });
    expect((await call(second.url, 'POST', `/secrets/${id}/decrypt`, { body: {} })).body).toEqual({ value: VALUE });
    expect(readFileSync(keyFile, 'utf8')).toBe(key);
  });

  it('accepts a configured key as hex or base64; another key cannot decrypt (500 decrypt_failed)', async () => {
    const dir = tempDir();
    const raw = randomBytes(32);
    const hexStore = await startStore({ dataDir: dir, secretsKey: raw.toString('hex') });
    const {
      body: { id },
    } = await call(hexStore.url, 'POST', '/secrets', { body: { name: 'N', scope_type: 'global', value: VALUE } });
    await hexStore.close();
    const b64Store = await startStore({ dataDir: dir, secretsKey: raw.toString('base64') });
    expect((await call(b64Store.url, 'POST', `/secrets/${id}/decrypt`, { body: {} })).body).toEqual({ value: VALUE });
    await b64Store.close();
    const otherStore = await startStore({ dataDir: dir, secretsKey: randomBytes(32).toString('hex') });
    const failed = await call(otherStore.url, 'POST', `/secrets/${id}/decrypt`, { body: {} });
    expect(failed).toMatchObject({
      status: 500,
      body: {
        code: 'decrypt_failed',
        error: `secret "${id}" cannot be decrypted with the configured secrets key (was the key changed?)`,
      },
    });
  });

  it.each([
    [
      'too short hex',
      'abcd',
      'secretsKey must be 64 hex characters or the base64 of 32 bytes (got a 4-character value that is neither)',
    ],
    [
      'base64 of 16 bytes',
      randomBytes(16).toString('base64'),
      'secretsKey must be 64 hex characters or the base64 of 32 bytes (got a 24-character value that is neither)',
    ],
  ])('refuses to start with a bad configured key: %s', async (_name, secretsKey, message) => {
    const dir = tempDir();
    await expect(startStore({ dataDir: dir, secretsKey })).rejects.toMatchObject({ code: 'config.invalid', message });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses to start when secrets.key holds garbage', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'secrets.key'), 'garbage\n', { mode: 0o600 });
    await expect(startStore({ dataDir: dir })).rejects.toMatchObject({
      code: 'config.invalid',
      message: `secrets key file "${join(dir, 'secrets.key')}" must hold 64 hex characters or the base64 of 32 bytes`,
    });
  });
});
