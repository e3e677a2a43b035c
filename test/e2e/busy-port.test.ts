// A second `start` on the port of a running one (same data dir) fails, naming the port, before it
// touches the running instance's store: here its event log, which opening the store would prune to
// --event-retention.

import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupAll, client, runCli, startRunnerWithStore } from './harness.js';

afterEach(cleanupAll);

/** The number of events in the store's event log (read-only: the running store keeps writing). */
function eventCount(dataDir: string): number {
  const db = new Database(join(dataDir, 'store.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT COUNT(*) FROM events').pluck().get() as number;
  } finally {
    db.close();
  }
}

describe('start (or store) on a busy port', () => {
  it('fails with the port in its message and leaves the running store as it was', async () => {
    const { runner, url, dataDir } = await startRunnerWithStore();
    const port = new URL(url).port;
    // more events than the second start's --event-retention keeps
    const c = client(url);
    for (let i = 0; i < 150; i++) {
      await c.createBreadcrumb({ title: `note ${i}`, schema_name: 'note.v1', tags: ['busy-port'], context: { i } });
    }
    const before = eventCount(dataDir);
    expect(before).toBeGreaterThan(100);

    // `store` alone on that port: the same
    const store = runCli(['store', '--port', port, '--data-dir', dataDir, '--event-retention', '100']);
    expect(await store.exited, store.stderr.join('')).toBe(1);
    expect(store.stderr.join('')).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(eventCount(dataDir)).toBeGreaterThanOrEqual(before);

    const second = runCli([
      'start',
      '--port',
      port,
      '--data-dir',
      dataDir,
      '--admin-port',
      '-1',
      '--event-retention',
      '100',
    ]);
    const code = await second.exited;
    const stderr = second.stderr.join('');
    expect(code, stderr).toBe(1);
    expect(stderr).toContain(`port ${port}`);
    expect(stderr).toContain('already in use');
    expect(eventCount(dataDir)).toBeGreaterThanOrEqual(before);
    expect(runner.proc.exitCode).toBeNull();
  }, 120_000);
});
