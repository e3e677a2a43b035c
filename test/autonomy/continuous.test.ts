// A continuous operator tool (issue 21) has exactly one live instance across two replicas, before
// and after SIGKILL of the replica running it: the other replica takes the lease over once it runs out.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { cleanupAll, client, startRunner, startStoreProcess, tempDir, toolContext, WS } from '../e2e/harness.js';

const LEASE_MS = 3_000;

afterAll(cleanupAll);

async function starts(c: StoreClient): Promise<string[]> {
  const items = await c.listAll({ schema_name: 'e2e.started.v1', include_context: true });
  return items.map((item) => String(item.context?.['run'])).sort();
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('continuous tools (two replicas)', () => {
  it('one live instance, taken over after SIGKILL of its holder', async () => {
    const bootDir = tempDir('tr-boot-');
    mkdirSync(join(bootDir, 'tools'));
    // Announces each start (its run id names the replica), then runs until stopped.
    writeFileSync(
      join(bootDir, 'tools', 'forever.json'),
      JSON.stringify({
        schema_name: 'tool.code.v1',
        title: 'forever',
        tags: ['tool', 'tool:forever', WS],
        context: {
          ...toolContext(
            'forever',
            `export async function execute(input, context) {
          await context.api.createBreadcrumb({ title: 'started', schema_name: 'e2e.started.v1', tags: ['e2e:started'], context: { run: context.request.id } });
          await new Promise(() => setInterval(() => {}, 1000));
        }`,
          ),
          permissions: { net: false, breadcrumbs: { write: ['e2e.started.v1'] } },
          bootstrap: { enabled: true, mode: 'continuous', priority: 1 },
        },
      }),
    );
    const { url } = await startStoreProcess(tempDir());
    const c = client(url);
    const flags = ['--bootstrap', '--bootstrap-dir', bootDir, '--continuous-lease-ms', String(LEASE_MS)];
    const replicas = [await startRunner(url, flags), await startRunner(url, flags)];
    await until('the first start', async () => (await starts(c)).length >= 1);
    // Two leases later there is still exactly one instance.
    await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
    const before = await starts(c);
    expect(before).toHaveLength(1);
    const holder = replicas.find((r) => before[0]?.includes(`#${r.proc.pid}-`));
    const other = replicas.find((r) => r !== holder);
    expect(holder).toBeDefined();
    const killedAt = Date.now();
    holder?.proc.kill('SIGKILL');
    await until('the takeover', async () => (await starts(c)).length >= 2);
    const takeoverMs = Date.now() - killedAt;
    const after = await starts(c);
    expect(after.filter((run) => run.includes(`#${other?.proc.pid}-`))).toHaveLength(1);
    // And it stays one: no further start while the new holder lives.
    await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
    expect(await starts(c)).toHaveLength(2);
    console.log(`continuous takeover after SIGKILL: ${takeoverMs} ms (lease ${LEASE_MS} ms)`);
  }, 180_000);
});
