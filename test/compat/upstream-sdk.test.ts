// The compat suite: our embedded store driven only through upstream's API, the way upstream's SDK
// and bootstrap script call it (see upstream-client.ts), with auth off and with auth on in the
// upstream-compatible `--auth-mint open` mode.
import { describe, expect, it } from 'vitest';
import { onCleanup, startStore } from '../store/helpers.js';
import { UpstreamStyleClient } from './upstream-client.js';

const modes = [
  { name: 'auth off', options: {} },
  {
    name: 'auth on, --auth-mint open',
    options: { authSecret: 'compat-suite-secret-0123456789abcd', authMint: 'open' as const },
  },
];

for (const mode of modes) {
  describe(`compat suite (${mode.name})`, () => {
    const client = async () => {
      const store = await startStore({ ...mode.options, pingIntervalMs: 100 });
      const sdk = new UpstreamStyleClient(store.url, {
        owner_id: '00000000-0000-0000-0000-000000000001',
        agent_id: '00000000-0000-0000-0000-000000000aaa',
        roles: ['curator', 'emitter', 'subscriber'],
      });
      await sdk.login();
      return { store, sdk };
    };

    it('breadcrumbs: create (idempotent), read, update with If-Match, history, delete — and a bootstrap re-run recognises "duplicate"', async () => {
      const { sdk } = await client();
      const { id } = await sdk.createBreadcrumb(
        { title: 'T', context: { a: 1 }, tags: ['workspace:templates'], visibility: 'team', sensitivity: 'low' },
        'tpl-1',
      );
      await expect(sdk.createBreadcrumb({ title: 'T', context: {}, tags: [] }, 'tpl-1')).rejects.toThrow(/duplicate/);
      const view = await sdk.getBreadcrumb(id);
      expect(view).toMatchObject({ id, title: 'T', context: { a: 1 }, tags: ['workspace:templates'], version: 1 });
      const full = await sdk.getBreadcrumbFull(id);
      expect(full).toMatchObject({
        visibility: 'Team',
        sensitivity: 'Low',
        checksum: expect.stringMatching(/^sha256:/),
      });
      expect(await sdk.updateBreadcrumb(id, 1, { context: { a: 2 } })).toMatchObject({ version: 2, context: { a: 2 } });
      await expect(sdk.updateBreadcrumb(id, 1, { title: 'stale' })).rejects.toThrow(/version_mismatch/);
      expect((await sdk.getBreadcrumbHistory(id)).map((h) => h.version)).toEqual([2, 1]);
      expect(await sdk.getBreadcrumbHistory('00000000-0000-4000-8000-000000000000')).toEqual([]);
      await sdk.deleteBreadcrumb(id);
      await expect(sdk.getBreadcrumb(id)).rejects.toThrow(/not found/);
    });

    it("listing like searchBreadcrumbs/getWorkspaceBreadcrumbs: every row, unknown params ignored; vectorSearch with the SDK's qvec form and nn", async () => {
      const { sdk } = await client();
      for (let i = 0; i < 7; i++)
        await sdk.createBreadcrumb({
          title: `agent ${i}`,
          context: { i },
          tags: ['ws:a'],
          schema_name: 'agent.def.v1',
        });
      await sdk.createBreadcrumb({ title: 'vector one', context: {}, tags: ['ws:a'], embedding: [1, 0, 0] } as Record<
        string,
        unknown
      >);
      expect(await sdk.searchBreadcrumbs({ tag: 'ws:a' })).toHaveLength(8);
      expect(
        await sdk.searchBreadcrumbs({
          schema_name: 'agent.def.v1',
          tag: 'ws:a',
          owner_id: 'x',
          updated_since: '2000-01-01',
        }),
      ).toHaveLength(7);
      expect(await sdk.vectorSearch({ q: 'agent', nn: 3 })).toHaveLength(3);
      const [nearest] = await sdk.vectorSearch({ qvec: [0.9, 0.1, 0], nn: 1 });
      expect(nearest).toMatchObject({ title: 'vector one' });
    });

    it('event stream: only breadcrumb.updated and ping, data lines only, upstream payload — also after a delete', async () => {
      const { sdk } = await client();
      const stream = await sdk.startEventStream({ agentId: 'x', filters: { any_tags: ['nothing'] } });
      onCleanup(() => stream.close());
      const { id } = await sdk.createBreadcrumb({
        title: 'req',
        context: { tool: 'echo' },
        tags: ['tool:request'],
        schema_name: 'tool.request.v1',
      });
      await sdk.deleteBreadcrumb(id);
      const marker = await sdk.createBreadcrumb({ title: 'marker', context: {}, tags: [] });
      await stream.waitFor(
        (events) => events.some((e) => e.breadcrumb_id === marker.id) && events.some((e) => e.type === 'ping'),
      );
      expect(new Set(stream.events.map((e) => e.type))).toEqual(new Set(['breadcrumb.updated', 'ping']));
      expect(stream.otherLines).toEqual([]);
      expect(stream.events.find((e) => e.breadcrumb_id === id)).toEqual({
        type: 'breadcrumb.updated',
        breadcrumb_id: id,
        owner_id: '00000000-0000-0000-0000-000000000001',
        version: 1,
        tags: ['tool:request'],
        schema_name: 'tool.request.v1',
        updated_at: expect.any(String),
        context: { tool: 'echo' },
      });
    });

    it('agents, tenants, ACL, DLQ, selectors and secrets calls of the SDK all answer', async () => {
      const { sdk } = await client();
      await sdk.createOrUpdateAgent('00000000-0000-0000-0000-000000000bbb', ['emitter']);
      expect((await sdk.listAgents()).map((a) => a.id)).toContain('00000000-0000-0000-0000-000000000bbb');
      expect(await sdk.getAgent('00000000-0000-0000-0000-000000000bbb')).toMatchObject({ roles: ['emitter'] });
      await sdk.deleteAgent('00000000-0000-0000-0000-000000000bbb');
      await sdk.createOrUpdateTenant('00000000-0000-0000-0000-0000000000t2', 'Two');
      expect(await sdk.getTenant('00000000-0000-0000-0000-0000000000t2')).toMatchObject({ name: 'Two' });
      expect((await sdk.listTenants()).length).toBeGreaterThanOrEqual(2);
      await sdk.deleteTenant('00000000-0000-0000-0000-0000000000t2');
      expect(await sdk.listAcls()).toEqual([]);
      expect(await sdk.listDlq()).toEqual([]);
      await sdk.deleteDlqItem('00000000-0000-0000-0000-000000000000');
      const selector = await sdk.createSelector({ any_tags: ['a'] });
      expect(await sdk.listSelectors()).toEqual([selector]);
      const { id } = await sdk.createSecret('OPENROUTER_API_KEY', 'v1', 'global');
      await sdk.updateSecret(id, 'v2');
      expect(await sdk.getSecret(id)).toEqual({ value: 'v2' });
      expect((await sdk.listSecrets('global')).map((s) => s.name)).toEqual(['OPENROUTER_API_KEY']);
      await sdk.deleteSecret(id);
      expect(await sdk.listSecrets()).toEqual([]);
    });
  });
}
