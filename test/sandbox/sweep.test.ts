// Temp dirs left by a service that died without cleaning up are removed by the next one; those of
// live services (and fresh ones) are kept.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { sweepTempDirs, TEMP_PREFIX } from '../../src/sandbox/process.js';
import { isolateTmp } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
beforeAll(() => {
  tmp = isolateTmp();
});
afterAll(() => tmp.restore());

function dir(owner: number, ageMs: number): string {
  const path = join(tmp.dir, `${TEMP_PREFIX}${owner}-abc${Math.random().toString(36).slice(2, 6)}`);
  mkdirSync(join(path, 'work'), { recursive: true });
  const when = new Date(Date.now() - ageMs);
  utimesSync(path, when, when);
  return path;
}

describe('sweepTempDirs', () => {
  it('removes old dirs of dead owners only', async () => {
    const deadPid = spawnSync('/bin/true').pid as number;
    const stale = dir(deadPid, 10 * 60_000);
    const fresh = dir(deadPid, 0);
    const mine = dir(process.pid, 10 * 60_000);
    const live = dir(process.ppid, 10 * 60_000);
    expect(await sweepTempDirs(silentLogger())).toBe(1);
    expect(existsSync(stale)).toBe(false);
    expect([fresh, mine, live].every((path) => existsSync(path))).toBe(true);
  });
});
