// Deployment stamps and the runner key: every way a stamped definition can be altered, copied,
// rolled back or forged is refused with its reason; the key file is created once and shared.

import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentOwner, createStamper, definitionDigest, DEPLOYMENT_FIELD } from '../../src/catalog/deployment.js';
import { resolveRunnerKey } from '../../src/catalog/runner-key.js';
import { silentLogger } from '../../src/logger.js';
import { tempDir } from '../store/helpers.js';

const WS = 'workspace:tools';
const ID = '3f1e2d4c-0000-4000-8000-000000000001';
const key = (text: string): Buffer =>
  resolveRunnerKey({ runnerSecret: text, dataDir: ':memory:', logger: silentLogger() }).key;
const stamper = createStamper(key('secret-a'));
const base = {
  name: 'vault',
  version: '1.0.0',
  code: { language: 'typescript', source: 'export async function execute() { return {}; }' },
  permissions: { net: false },
};

function deployed(
  context: Record<string, unknown> = base,
  id = ID,
  version = 2,
): { id: string; version: number; context: Record<string, unknown> } {
  return {
    id,
    version,
    context: {
      ...context,
      [DEPLOYMENT_FIELD]: stamper.stamp({
        workspace: WS,
        name: context['name'] as string,
        owner: 'agent:alice',
        id,
        version,
        context,
      }),
    },
  };
}

describe('deployment stamps', () => {
  it('verify for the record they were made for', () => {
    expect(stamper.assess(deployed(), WS)).toEqual({ kind: 'stamped', owner: 'agent:alice' });
    expect(stamper.isStamped(deployed(), WS)).toBe(true);
  });

  it('refuse a later write by anyone (source, schemas, permissions, tags: any version bump)', () => {
    const record = deployed();
    expect(stamper.assess({ ...record, version: 3 }, WS)).toEqual({
      kind: 'untrusted',
      reason: `definition ${ID} was changed outside the runner after its deployment (deployed as store version 2, now version 3); only its owner (agent:alice) can change it, through tool.create.request.v1`,
    });
  });

  it('refuse a changed context at the same version (digest), a copy into another record and a rollback', () => {
    const record = deployed();
    const changed = { ...record, context: { ...record.context, permissions: { net: ['evil.example.com'] } } };
    expect(stamper.assess(changed, WS)).toEqual({
      kind: 'untrusted',
      reason: `definition ${ID} differs from what the runner deployed`,
    });
    expect(stamper.assess({ ...record, id: 'other-id' }, WS)).toEqual({
      kind: 'untrusted',
      reason: `definition other-id carries the deployment stamp of definition ${ID}: it was copied, not deployed`,
    });
    // An older stamped context written back later lands at a newer store version.
    expect(stamper.assess({ ...deployed(base, ID, 2), version: 5 }, WS).kind).toBe('untrusted');
  });

  it('refuse a stamp under another name, workspace, owner or key, and forged or malformed stamps', () => {
    const record = deployed();
    const forged = `definition ${ID} carries a deployment stamp that does not verify with this runner's key (forged or altered, or signed by a runner with another --runner-secret)`;
    expect(stamper.assess({ ...record, context: { ...record.context, name: 'other' } }, WS)).toEqual({
      kind: 'untrusted',
      reason: forged,
    });
    expect(stamper.assess(record, 'workspace:other')).toEqual({ kind: 'untrusted', reason: forged });
    const stamp = record.context[DEPLOYMENT_FIELD] as Record<string, unknown>;
    expect(
      stamper.assess(
        { ...record, context: { ...record.context, [DEPLOYMENT_FIELD]: { ...stamp, owner: 'agent:mallory' } } },
        WS,
      ),
    ).toEqual({ kind: 'untrusted', reason: forged });
    expect(
      stamper.assess(
        { ...record, context: { ...record.context, [DEPLOYMENT_FIELD]: { ...stamp, sig: 'hmac-sha256:00' } } },
        WS,
      ),
    ).toEqual({ kind: 'untrusted', reason: forged });
    expect(createStamper(key('secret-b')).assess(record, WS)).toEqual({ kind: 'untrusted', reason: forged });
    expect(stamper.assess({ ...record, context: { ...record.context, [DEPLOYMENT_FIELD]: 'trust me' } }, WS)).toEqual({
      kind: 'untrusted',
      reason: `definition ${ID} has a "deployment" field that is not a runner stamp`,
    });
    expect(
      stamper.assess({ ...record, context: { ...record.context, [DEPLOYMENT_FIELD]: { ...stamp, version: '2' } } }, WS),
    ).toEqual({ kind: 'untrusted', reason: `definition ${ID} has a malformed deployment stamp` });
    expect(
      stamper.assess(
        { ...record, context: { ...record.context, [DEPLOYMENT_FIELD]: stamper.pending('agent:alice', 'r1') } },
        WS,
      ),
    ).toEqual({
      kind: 'untrusted',
      reason: `definition ${ID} is being deployed (its stamp is not written yet)`,
      pending: true,
    });
  });

  it('treat an unstamped record as a direct write only while it was never changed', () => {
    expect(stamper.assess({ id: ID, version: 1, context: base, created_by: 'alice' }, WS)).toEqual({
      kind: 'direct',
      owner: 'agent:alice',
    });
    expect(stamper.assess({ id: ID, version: 1, context: base, created_by: null }, WS)).toEqual({
      kind: 'direct',
      owner: 'agent:(unknown)',
    });
    expect(stamper.assess({ id: ID, version: 2, context: base, created_by: 'alice' }, WS)).toEqual({
      kind: 'untrusted',
      reason: `definition ${ID} was changed after it was written (store version 2) and not through the runner; a tool changes only through a tool.create.request.v1 of its owner with replaces_version`,
    });
  });

  it('digest the context without the stamp, independent of key order', () => {
    expect(definitionDigest({ b: 1, a: { y: 2, x: 1 } })).toBe(
      definitionDigest({ a: { x: 1, y: 2 }, b: 1, [DEPLOYMENT_FIELD]: { any: 'thing' } }),
    );
    expect(definitionDigest({ a: 1 })).not.toBe(definitionDigest({ a: 2 }));
    expect(agentOwner('')).toBe('agent:(unknown)');
  });
});

describe('runner key', () => {
  const log = silentLogger();
  it('is created once by the service in the data dir (mode 0600) and shared by every later start', () => {
    const dir = join(tempDir(), 'nested');
    const first = resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log, role: 'service' });
    const second = resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log, role: 'service' });
    expect(first.source).toBe('key-file');
    expect(second.key.equals(first.key)).toBe(true);
    expect(statSync(join(dir, 'runner.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'runner.key'), 'utf8')).toMatch(/^hex:[0-9a-f]{64}\n$/);
    // A client command reading the file gets the same key.
    expect(resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log }).key.equals(first.key)).toBe(true);
  });

  it('the key file holds exactly the text to pass as --runner-secret', () => {
    const dir = tempDir();
    const fromFile = resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log, role: 'service' });
    const text = readFileSync(join(dir, 'runner.key'), 'utf8').trim();
    expect(
      resolveRunnerKey({ runnerSecret: text, dataDir: ':memory:', logger: log }).master.equals(fromFile.master),
    ).toBe(true);
    // And any --runner-secret written into the file is the same runner.
    const other = tempDir();
    writeFileSync(join(other, 'runner.key'), 'my-shared-secret-0123456789\n');
    expect(
      resolveRunnerKey({ runnerSecret: undefined, dataDir: other, logger: log }).key.equals(
        key('my-shared-secret-0123456789'),
      ),
    ).toBe(true);
  });

  it('a client command never creates a key file: it fails naming the file and what to pass', () => {
    const dir = join(tempDir(), 'data');
    expect(() => resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log })).toThrow(
      `no runner key: ${join(dir, 'runner.key')} does not exist (a client command never makes its own; the service creates it in its --data-dir). Pass the service's --data-dir (TOOLS_RUNNER_DATA_DIR), or its --runner-secret (TOOLS_RUNNER_RUNNER_SECRET)`,
    );
    expect(existsSync(dir)).toBe(false);
    expect(() => resolveRunnerKey({ runnerSecret: undefined, dataDir: ':memory:', logger: log })).toThrow(
      /^no runner key: --data-dir :memory: keeps no key file\. Pass the service's --runner-secret/,
    );
  });

  it('a service on a shared database (start --db) needs --runner-secret: a key file per data dir would give each replica its own claim keys', () => {
    const dir = join(tempDir(), 'data');
    const sharedDb = 'postgres://tr:***@db.internal:5432/store';
    expect(() =>
      resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log, role: 'service', sharedDb }),
    ).toThrow(
      /^--db postgres:\/\/tr:\*\*\*@db\.internal:5432\/store needs --runner-secret \(or TOOLS_RUNNER_RUNNER_SECRET\): replicas sharing a database/,
    );
    expect(existsSync(dir)).toBe(false);
    // With the secret, every replica derives the same key whatever its data dir.
    const a = resolveRunnerKey({
      runnerSecret: 'shared-secret-0123456789',
      dataDir: dir,
      logger: log,
      role: 'service',
      sharedDb,
    });
    const b = resolveRunnerKey({
      runnerSecret: 'shared-secret-0123456789',
      dataDir: tempDir(),
      logger: log,
      role: 'service',
      sharedDb,
    });
    expect(a.key.equals(b.key)).toBe(true);
  });

  it('reads a key file of the old format (bare hex) as the same key; the service rewrites it in the new format', () => {
    const dir = tempDir();
    const hex = 'ab'.repeat(32);
    writeFileSync(join(dir, 'runner.key'), `${hex}\n`, { mode: 0o600 });
    const before = resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log });
    expect(before.master.equals(Buffer.from(hex, 'hex'))).toBe(true);
    expect(readFileSync(join(dir, 'runner.key'), 'utf8')).toBe(`${hex}\n`);
    const service = resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log, role: 'service' });
    expect(service.key.equals(before.key)).toBe(true);
    expect(readFileSync(join(dir, 'runner.key'), 'utf8')).toBe(`hex:${hex}\n`);
    expect(statSync(join(dir, 'runner.key')).mode & 0o777).toBe(0o600);
    expect(
      resolveRunnerKey({ runnerSecret: `hex:${hex}`, dataDir: ':memory:', logger: log }).key.equals(before.key),
    ).toBe(true);
  });

  it('derives from --runner-secret (same secret, same key; never the raw secret)', () => {
    const a = resolveRunnerKey({ runnerSecret: 'shared', dataDir: tempDir(), logger: log });
    expect(a.source).toBe('runner-secret');
    expect(a.key.equals(key('shared'))).toBe(true);
    expect(a.key.equals(Buffer.from('shared'))).toBe(false);
  });

  it.each([
    ['not a key', 'too short'],
    ['hex:abcd', 'hex: with too few digits'],
    ['', 'empty'],
  ])('refuses a key file holding %j (%s), naming it', (text) => {
    const dir = tempDir();
    const file = join(dir, 'runner.key');
    writeFileSync(file, text);
    expect(() => resolveRunnerKey({ runnerSecret: undefined, dataDir: dir, logger: log, role: 'service' })).toThrow(
      `runner key file "${file}" must hold a runner secret: 16 or more characters, or hex:<64 hex digits>`,
    );
  });

  it('the service says when it cannot create the key file, naming it', () => {
    const blocker = join(tempDir(), 'a-file');
    writeFileSync(blocker, '');
    const file = join(blocker, 'data', 'runner.key');
    expect(() =>
      resolveRunnerKey({ runnerSecret: undefined, dataDir: join(blocker, 'data'), logger: log, role: 'service' }),
    ).toThrow(new RegExp(`^cannot create runner key file "${file}": ENOTDIR`));
  });

  it('refuses a --runner-secret "hex:" with anything but 64 hex digits', () => {
    expect(() => key(`hex:${'g'.repeat(64)}`)).toThrow(
      'a runner secret starting with "hex:" must be followed by exactly 64 hex digits',
    );
  });
});
