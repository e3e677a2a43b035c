// A full disk, for real: the store's data dir on a small tmpfs (mounted by the test, which needs
// root), filled up by a file beside the database. Writes answer 507 store.full, /health says
// degraded (503) with the reason, /metrics counts it, and once the file is removed writes succeed
// again by themselves and /health is back to 200.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { call, crumb, onCleanup, startStore } from './helpers.js';

/** Mounts a tmpfs of `size` on a fresh dir (unmounted and removed after the test); undefined when that is not allowed here. */
function smallDisk(size: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'disk-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  onCleanup(() => {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

// Whether this process may mount a tmpfs (root, and a kernel/container that allows it).
function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const dir = mkdtempSync(join(tmpdir(), 'disk-full-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const CAN_MOUNT = canMount();

/** Writes zeros to `path` until the disk is full. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(16 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

const metric = async (url: string, name: string): Promise<number> => {
  const text = (await call(url, 'GET', '/metrics')).body as string;
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
};

describe.skipIf(!CAN_MOUNT)('store on a full disk (SQLite on a small tmpfs; needs root)', () => {
  it('answers 507 store.full, reports degraded health and a metric, and writes again once space returns', async () => {
    const dir = smallDisk('4m') as string;
    const store = await startStore({ dataDir: join(dir, 'data') });
    const first = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    expect(first.status).toBe(201);
    fill(join(dir, 'filler'));
    const big = { blob: 'x'.repeat(48 * 1024) };
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    for (let n = 0; n < 200 && refused === undefined; n++) {
      const reply = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: big }) });
      if (reply.status !== 201) refused = reply;
    }
    expect(refused?.status).toBe(507);
    expect(refused?.body).toMatchObject({ code: 'store.full' });
    expect(refused?.body.error).toMatch(/disk is full/);
    const health = await call(store.url, 'GET', '/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: 'degraded', reason: expect.stringMatching(/^store\.full: /) });
    expect(await metric(store.url, 'tools_runner_store_full')).toBe(1);
    expect(await metric(store.url, 'tools_runner_store_full_refusals_total')).toBeGreaterThanOrEqual(1);

    rmSync(join(dir, 'filler'));
    const again = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'after' }) });
    expect(again.status).toBe(201);
    expect((await call(store.url, 'GET', `/breadcrumbs/${again.body.id as string}`)).body).toMatchObject({
      title: 'after',
    });
    expect((await call(store.url, 'GET', `/breadcrumbs/${first.body.id as string}`)).status).toBe(200);
    const healthy = await call(store.url, 'GET', '/health');
    expect(healthy.status).toBe(200);
    expect(healthy.body).toMatchObject({ status: 'ok' });
    expect(await metric(store.url, 'tools_runner_store_full')).toBe(0);
    await store.close();
    const db = new Database(join(dir, 'data', 'store.db'), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });
});
