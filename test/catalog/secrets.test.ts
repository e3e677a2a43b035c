// Secret resolution against the real embedded store over HTTP: a tool-scoped secret reaches only the
// definition (tool.code.v1 record id) it was granted to; a name-scoped one only operator tools; and
// the resolver lists secrets by scope_type alone, the one query upstream rcrt-server (scope_id typed
// as a UUID) also answers.

import { describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSecretResolver } from '../../src/tool-context/secrets.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const DEF = '8c9d0e1f-2a3b-4c5d-8e6f-000000000001';
const OTHER = '8c9d0e1f-2a3b-4c5d-8e6f-000000000002';

async function setup(): Promise<{ client: StoreClient; queries: unknown[] }> {
  const store = await startStore();
  const real = createStoreClient({
    baseUrl: store.url,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'test' } },
  });
  onCleanup(() => real.close());
  const queries: unknown[] = [];
  // Records the queries at the StoreClient boundary; every call goes to the real store.
  const client: StoreClient = {
    ...real,
    listSecrets: (query, opts) => (queries.push(query), real.listSecrets(query, opts)),
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
  return { client, queries };
}

describe('secret resolution', () => {
  it('gives a tool-scoped secret only to the definition it was granted to', async () => {
    const { client } = await setup();
    const secrets = createSecretResolver({ client, workspace: WS, logger: silentLogger() });
    expect(await secrets.resolve(['KEY'], { tool: 'vault', rid: 'r1', definitionId: DEF })).toEqual({
      values: { KEY: 'for-the-definition' },
      missing: [],
    });
    // Same name, another definition (e.g. re-created by someone after a delete): nothing.
    expect(await secrets.resolve(['KEY'], { tool: 'vault', rid: 'r2', definitionId: OTHER })).toEqual({
      values: {},
      missing: ['KEY'],
    });
    // An agent tool never gets a secret scoped to its name: names change hands, definitions do not.
    expect(await secrets.resolve(['KEY'], { tool: 'vault', rid: 'r3' })).toEqual({ values: {}, missing: ['KEY'] });
  });

  it('gives a name-scoped secret to operator tools (host and bootstrap), whose names agents cannot take', async () => {
    const { client } = await setup();
    const secrets = createSecretResolver({ client, workspace: WS, logger: silentLogger() });
    expect(await secrets.resolveOne('KEY', { tool: 'vault', rid: 'r1', operator: true })).toBe('for-the-name');
    expect(await secrets.resolveOne('KEY', { tool: 'other', rid: 'r1', operator: true })).toBeUndefined();
  });

  it('falls back to the workspace, then global, then the secrets file', async () => {
    const { client } = await setup();
    const secrets = createSecretResolver({
      client,
      workspace: WS,
      logger: silentLogger(),
      fileSecrets: { FILE_KEY: 'from-file' },
    });
    expect(
      await secrets.resolve(['WS_KEY', 'G_KEY', 'FILE_KEY', 'NOPE'], { tool: 't', rid: 'r', definitionId: DEF }),
    ).toEqual({
      values: { WS_KEY: 'for-the-workspace', G_KEY: 'for-everyone', FILE_KEY: 'from-file' },
      missing: ['NOPE'],
    });
  });

  it('lists by scope_type only (upstream refuses a scope_id that is not a UUID) and caches each listing', async () => {
    const { client, queries } = await setup();
    const secrets = createSecretResolver({ client, workspace: WS, logger: silentLogger() });
    await secrets.resolve(['G_KEY', 'G_KEY'], { tool: 't', rid: 'r', definitionId: DEF });
    await secrets.resolve(['G_KEY'], { tool: 't', rid: 'r', definitionId: DEF });
    expect(queries).toEqual([{ scope_type: 'tool' }, { scope_type: 'workspace' }, { scope_type: 'global' }]);
  });
});
