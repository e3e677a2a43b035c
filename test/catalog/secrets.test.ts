// Secret resolution against the real embedded store over HTTP: a tool-scoped secret reaches only the
// definition (tool.code.v1 record id) it was granted to; a name-scoped one only operator tools; the
// operator's secrets (workspace, global, secrets file) reach operator tools, and an agent tool only
// when shared with it (--share-secrets); and the resolver lists secrets by scope_type alone, the one
// query upstream rcrt-server (scope_id typed as a UUID) also answers.

import { describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSecretResolver, missingSecretsMessage } from '../../src/tool-context/secrets.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const DEF = '8c9d0e1f-2a3b-4c5d-8e6f-000000000001';
const OTHER = '8c9d0e1f-2a3b-4c5d-8e6f-000000000002';

async function setup(): Promise<{ client: StoreClient; queries: unknown[]; decrypts: string[] }> {
  const store = await startStore();
  const real = createStoreClient({
    baseUrl: store.url,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'test' } },
  });
  onCleanup(() => real.close());
  const queries: unknown[] = [];
  const decrypts: string[] = [];
  // Records the queries and decrypts at the StoreClient boundary; every call goes to the real store.
  const client: StoreClient = {
    ...real,
    listSecrets: (query, opts) => (queries.push(query), real.listSecrets(query, opts)),
    decryptSecret: (id, reason, opts) => (decrypts.push(reason ?? ''), real.decryptSecret(id, reason, opts)),
  };
  await real.createSecret({ name: 'KEY', scope_type: 'tool', scope_id: DEF, value: 'for-the-definition' });
  await real.createSecret({ name: 'KEY', scope_type: 'tool', scope_id: 'vault', value: 'for-the-name' });
  await real.createSecret({ name: 'WS_KEY', scope_type: 'workspace', scope_id: WS, value: 'for-the-workspace' });
  await real.createSecret({
    name: 'WS_KEY',
    scope_type: 'workspace',
    scope_id: 'workspace:other',
    value: 'other-workspace',
  });
  await real.createSecret({ name: 'G_KEY', scope_type: 'global', value: 'for-everyone' });
  return { client, queries, decrypts };
}

describe('secret resolution', () => {
  it('gives a tool-scoped secret only to the definition it was granted to', async () => {
    const { client } = await setup();
    const secrets = createSecretResolver({ client, workspace: WS, logger: silentLogger() });
    expect(await secrets.resolve(['KEY'], { tool: 'vault', rid: 'r1', definitionId: DEF })).toEqual({
      values: { KEY: 'for-the-definition' },
      missing: [],
      unshared: [],
    });
    // Same name, another definition (e.g. re-created by someone after a delete): nothing.
    expect(await secrets.resolve(['KEY'], { tool: 'vault', rid: 'r2', definitionId: OTHER })).toEqual({
      values: {},
      missing: ['KEY'],
      unshared: [],
    });
    // An agent tool never gets a secret scoped to its name: names change hands, definitions do not.
    expect(await secrets.resolve(['KEY'], { tool: 'vault', rid: 'r3' })).toEqual({
      values: {},
      missing: ['KEY'],
      unshared: [],
    });
  });

  it('gives a name-scoped secret to operator tools (host and bootstrap), whose names agents cannot take', async () => {
    const { client } = await setup();
    const secrets = createSecretResolver({ client, workspace: WS, logger: silentLogger() });
    expect(await secrets.resolveOne('KEY', { tool: 'vault', rid: 'r1', operator: true })).toBe('for-the-name');
    expect(await secrets.resolveOne('KEY', { tool: 'other', rid: 'r1', operator: true })).toBeUndefined();
  });

  it("falls back to the workspace, then global, then the secrets file (an operator tool's)", async () => {
    const { client } = await setup();
    const secrets = createSecretResolver({
      client,
      workspace: WS,
      logger: silentLogger(),
      fileSecrets: { FILE_KEY: 'from-file' },
    });
    expect(
      await secrets.resolve(['WS_KEY', 'G_KEY', 'FILE_KEY', 'NOPE'], {
        tool: 't',
        rid: 'r',
        definitionId: DEF,
        operator: true,
      }),
    ).toEqual({
      values: { WS_KEY: 'for-the-workspace', G_KEY: 'for-everyone', FILE_KEY: 'from-file' },
      missing: ['NOPE'],
      unshared: [],
    });
  });

  it("gives an agent tool the operator's secrets only when shared with its name or with agents", async () => {
    const { client, decrypts } = await setup();
    const secrets = createSecretResolver({
      client,
      workspace: WS,
      logger: silentLogger(),
      fileSecrets: { FILE_KEY: 'from-file' },
      shares: { G_KEY: ['agents'], FILE_KEY: ['summarize'] },
    });
    const all = ['WS_KEY', 'G_KEY', 'FILE_KEY', 'NOPE'];
    expect(await secrets.resolve(all, { tool: 'summarize', rid: 'r', definitionId: DEF })).toEqual({
      values: { G_KEY: 'for-everyone', FILE_KEY: 'from-file' },
      missing: ['WS_KEY', 'NOPE'],
      unshared: ['WS_KEY'],
    });
    expect(await secrets.resolve(all, { tool: 'other', rid: 'r', definitionId: OTHER })).toEqual({
      values: { G_KEY: 'for-everyone' },
      missing: ['WS_KEY', 'FILE_KEY', 'NOPE'],
      unshared: ['WS_KEY', 'FILE_KEY'],
    });
    // an unshared value is never decrypted for an agent tool
    expect(decrypts.filter((reason) => reason.includes('tool:other'))).toHaveLength(1);
    // what the start-time check names: not shared, not scoped to the record (KEY is, for DEF)
    expect(
      await secrets.unshared(['KEY', 'WS_KEY', 'G_KEY', 'NOPE'], { tool: 'x', rid: 'r', definitionId: DEF }),
    ).toEqual(['WS_KEY', 'NOPE']);
    expect(await secrets.unshared(['WS_KEY'], { tool: 'x', rid: 'r', operator: true })).toEqual([]);
  });

  it('names the unshared secrets and the share in the secret.missing message', () => {
    expect(missingSecretsMessage('t', { missing: ['A', 'B'], unshared: ['B'] })).toBe(
      'tool "t" needs secret(s) that are not set: A; tool "t" needs secret(s) the operator has not shared with agent-written tools: B (the operator shares them with --share-secrets "B=t", or scopes a secret to this tool\'s record)',
    );
  });

  it('lists by scope_type only (upstream refuses a scope_id that is not a UUID) and caches each listing', async () => {
    const { client, queries } = await setup();
    const secrets = createSecretResolver({ client, workspace: WS, logger: silentLogger() });
    await secrets.resolve(['G_KEY', 'G_KEY'], { tool: 't', rid: 'r', definitionId: DEF });
    await secrets.resolve(['G_KEY'], { tool: 't', rid: 'r', definitionId: DEF });
    expect(queries).toEqual([{ scope_type: 'tool' }, { scope_type: 'workspace' }, { scope_type: 'global' }]);
  });
});
