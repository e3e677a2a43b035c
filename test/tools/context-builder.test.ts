// The shipped `context-builder` tool with a real embedded store: ids first, then search, tags and
// schemas (newest first), each breadcrumb once, within the budget (the item that does not fit is
// cut, the rest counted as omitted); Secret breadcrumbs and the runner's records never appear; a
// write through its read grant is refused.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { defaultConfig, type Config } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, sandboxToolOf, type Sandbox } from '../../src/sandbox/index.js';
import type { ToolDefinition } from '../../src/screen/index.js';
import { createToolApi } from '../../src/tool-context/tool-api.js';
import { createStore, type Store } from '../../src/store/index.js';
import { codeOf } from '../sandbox/helpers.js';
import { shippedTool } from './helpers.js';

let store: Store;
let client: StoreClient;
let sandbox: Sandbox;
let config: Config;
let tool: ToolDefinition;
const ids: Record<string, string> = {};

beforeAll(async () => {
  config = defaultConfig({ port: 0, dataDir: ':memory:', logLevel: 'silent', poolSize: 1 });
  store = await createStore({ ...config, logger: silentLogger() });
  client = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  sandbox = await createSandbox({ config, logger: silentLogger() });
  tool = await shippedTool('context-builder.json', config);
  const add = async (key: string, body: Parameters<StoreClient['createBreadcrumb']>[0]) => {
    ids[key] = (await client.createBreadcrumb(body)).id;
  };
  // created one after the other: the listing's newest-first order is the reverse of this one
  await add('old', {
    title: 'Old note',
    schema_name: 'note.v1',
    tags: ['notes'],
    context: { text: 'The launch moved to March.' },
  });
  await add('plan', {
    title: 'Release plan',
    schema_name: 'note.v1',
    tags: ['notes'],
    context: { text: 'Ship the release on Friday.' },
  });
  await add('big', { title: 'Big log', schema_name: 'log.v1', tags: ['logs'], context: { text: 'x'.repeat(3000) } });
  await add('secret', {
    title: 'Keys',
    schema_name: 'note.v1',
    tags: ['notes'],
    sensitivity: 'Secret',
    context: { text: 'sk-live-1' },
  });
  await add('pinned', {
    title: 'User profile',
    schema_name: 'profile.v1',
    tags: ['user'],
    context: { name: 'Ada', lang: 'en' },
  });
});

afterAll(async () => {
  await sandbox?.close();
  client?.close();
  await store?.close();
});

const build = (input: Record<string, unknown>) =>
  sandbox.run({
    tool: sandboxToolOf(tool),
    input,
    secrets: {},
    request: { id: 'r-ctx', workspace: 'workspace:tools' },
    api: createToolApi({ client, tool: 'context-builder', rid: 'r-ctx', config }),
  });

describe('context-builder (shipped tool) with a real store', () => {
  it('orders ids, search, tags, schemas; each breadcrumb once; Secret ones never read', async () => {
    const result = await build({ ids: [ids.pinned], query: 'release', tags: ['notes'], schema_names: ['note.v1'] });
    const out = result.ok
      ? (result.output as { items: Array<{ id: string; source: string }>; context: string; truncated: boolean })
      : undefined;
    expect(result.ok ? '' : result.error).toBe('');
    expect(out?.items.map((i) => [i.id, i.source])).toEqual([
      [ids.pinned, `id:${ids.pinned}`],
      [ids.plan, 'search'],
      [ids.old, 'tag:notes'],
    ]);
    expect(out?.context).toContain('## User profile [profile.v1]');
    expect(out?.context).toContain('{"name":"Ada","lang":"en"}');
    expect(out?.context).toContain('Ship the release on Friday.');
    expect(out?.context).not.toContain('sk-live-1');
    expect(out?.truncated).toBe(false);
  });

  it('keeps within the budget: the item that does not fit is cut, the rest omitted', async () => {
    const result = await build({ tags: ['logs', 'notes'], max_tokens: 300 });
    expect(result.ok ? '' : result.error).toBe('');
    const out = result.ok ? (result.output as Record<string, unknown>) : {};
    expect(out.budget_chars).toBe(1200);
    expect(out.used_chars).toBeLessThanOrEqual(1200);
    expect((out.context as string).length).toBe(out.used_chars);
    expect(out.items).toEqual([expect.objectContaining({ id: ids.big, source: 'tag:logs', cut: true })]);
    expect(out.omitted).toBe(2);
    expect(out.truncated).toBe(true);
  });

  it('json format gives one JSON object per line, with chosen fields', async () => {
    const result = await build({ ids: [ids.pinned], format: 'json', fields: ['name'] });
    const line = result.ok ? (result.output as { context: string }).context.trim() : '';
    expect(JSON.parse(line)).toMatchObject({ id: ids.pinned, title: 'User profile', content: '{"name":"Ada"}' });
  });

  it('declares a read-only contract and only the read grant', () => {
    expect(tool.contract).toMatchObject({ side_effect: 'read-only', idempotent: true });
    expect(tool.api).toBe('read');
    expect(tool.net).toEqual([]);
  });

  it('an unknown id is not_found', async () => {
    const result = await build({ ids: ['00000000-0000-4000-8000-000000000000'] });
    expect(codeOf(result)).toBe('not_found');
  });
});
