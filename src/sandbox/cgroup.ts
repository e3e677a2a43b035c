// cgroup v2 memory limits for sandbox processes, where the machine allows them.
//
// The V8 heap flag does not cap ArrayBuffers (they live outside the heap); a cgroup v2 `memory.max` caps
// everything the process maps. Detection needs a cgroup v2 hierarchy with the memory controller
// enabled for children of the service's own cgroup (e.g. systemd `Delegate=yes`), and write access.
// A v2 cgroup that still holds processes cannot enable controllers for its children ("no internal
// processes"), so when the service is the only process of its cgroup it moves itself into a
// `supervisor` leaf first. Anything else (cgroup v1 only, no delegation, read-only) -> unavailable.

import { mkdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';

/** Outcome of probing: where per-process cgroups go, or why they cannot be used. */
export interface CgroupProbe {
  /** Directory under which per-process cgroups are created. */
  base?: string;
  /** Why cgroups cannot be used (when base is undefined). */
  reason?: string;
}

/** Where this process sits in the cgroup v2 hierarchy. */
export interface CgroupLocation {
  /** cgroup2 mount point. */
  mount: string;
  /** This process's cgroup path inside the mount (the "0::" line of /proc/self/cgroup). */
  path: string;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Finds this process's cgroup v2 directory from /proc (undefined when there is no v2 hierarchy). */
export async function locateOwnCgroup(procRoot = '/proc'): Promise<CgroupLocation | undefined> {
  const cgroups = await readText(join(procRoot, 'self/cgroup'));
  const mounts = await readText(join(procRoot, 'self/mountinfo'));
  const line = cgroups?.split('\n').find((l) => l.startsWith('0::'));
  if (!line || !mounts) return undefined;
  for (const entry of mounts.split('\n')) {
    const [left, right] = entry.split(' - ');
    if (right?.split(' ')[0] !== 'cgroup2') continue;
    const mount = left?.split(' ')[4];
    if (mount) return { mount, path: line.slice(3).trim() || '/' };
  }
  return undefined;
}

function words(text: string | undefined): string[] {
  return (text ?? '')
    .split(/\s+/)
    .map((w) => w.replace(/^\+/, ''))
    .filter((w) => w !== '');
}

/** Checks (and if needed enables) memory limits for children of the given cgroup; never throws. */
export async function probeCgroup(
  location: CgroupLocation | undefined,
  logger: Logger,
  pid = process.pid,
): Promise<CgroupProbe> {
  if (!location) return { reason: 'no cgroup v2 hierarchy (cgroup v1 only?)' };
  const dir = join(location.mount, location.path);
  const controllers = words(await readText(join(dir, 'cgroup.controllers')));
  if (!controllers.includes('memory')) {
    return {
      reason: `the cgroup v2 memory controller is not available in ${dir} (controllers: ${controllers.join(' ') || 'none'})`,
    };
  }
  try {
    if (!words(await readText(join(dir, 'cgroup.subtree_control'))).includes('memory')) {
      const members = words(await readText(join(dir, 'cgroup.procs')));
      if (members.some((member) => member !== String(pid))) {
        return {
          reason: `${dir} holds other processes, so its children cannot get memory limits (delegate a cgroup to the service)`,
        };
      }
      if (members.length > 0) {
        await mkdir(join(dir, 'supervisor'), { recursive: true });
        await writeFile(join(dir, 'supervisor', 'cgroup.procs'), String(pid));
      }
      await writeFile(join(dir, 'cgroup.subtree_control'), '+memory');
    }
    // cpu.max for limits.cpu_percent (cpu-limit.ts): best effort; without it the duty cycle applies
    if (controllers.includes('cpu') && !words(await readText(join(dir, 'cgroup.subtree_control'))).includes('cpu')) {
      await writeFile(join(dir, 'cgroup.subtree_control'), '+cpu').catch(() => undefined);
    }
    const probe = await createProcessCgroup(dir, `tools-runner-probe-${pid}`, 64 * 1024 * 1024, logger);
    await probe.remove();
    return { base: dir };
  } catch (err) {
    return { reason: `cannot create memory-limited cgroups under ${dir}: ${(err as Error).message}` };
  }
}

/** How often, and how far apart, removing a cgroup the kernel still calls busy is tried. */
const REMOVE_ATTEMPTS = 20;
const REMOVE_RETRY_MS = 25;

/** A per-process cgroup with memory.max set. */
export interface ProcessCgroup {
  readonly dir: string;
  /** Moves `pid` into the cgroup (before the job is sent). */
  add(pid: number): Promise<void>;
  /** Whether the kernel OOM-killed something in it. */
  oomKilled(): Promise<boolean>;
  /**
   * Sets `cpu.max` (`<quota> <period>` in µs, or `max`); false when the cgroup has no cpu controller
   * (no cpu.max file) or the write failed — the caller then limits CPU another way.
   */
  setCpuMax?(quotaUs: number | 'max', periodUs: number): Promise<boolean>;
  /** Removes the (empty) cgroup; never throws. */
  remove(): Promise<void>;
}

/** The errno code of a failed fs call (`EACCES`, `EBUSY` ...), or its message when it has none. */
function errnoOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String((err as Error).message ?? err);
}

/**
 * Creates `<base>/<name>` limited to `limitBytes` (no swap; the whole group is killed on OOM).
 * `memory.max` must be written; the optional settings (swap, group OOM kill) and the removal are
 * best effort, and each failure is logged as a warning with the path and errno.
 */
export async function createProcessCgroup(
  base: string,
  name: string,
  limitBytes: number,
  logger: Logger,
): Promise<ProcessCgroup> {
  const dir = join(base, name);
  const optional = async (file: string, value: string): Promise<void> => {
    const path = join(dir, file);
    await writeFile(path, value).catch((err: unknown) =>
      logger.warn('cgroup setting not written', { path, errno: errnoOf(err) }),
    );
  };
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'memory.max'), String(limitBytes));
  await optional('memory.swap.max', '0');
  await optional('memory.oom.group', '1');
  return {
    dir,
    add: (pid) => writeFile(join(dir, 'cgroup.procs'), String(pid)),
    async setCpuMax(quotaUs, periodUs) {
      try {
        // 'r+': never create the file; it exists only when the cpu controller is enabled for the cgroup
        await writeFile(join(dir, 'cpu.max'), `${quotaUs} ${periodUs}`, { flag: 'r+' });
        return true;
      } catch {
        return false;
      }
    },
    async oomKilled() {
      const events = await readText(join(dir, 'memory.events'));
      const match = /^oom_kill (\d+)/m.exec(events ?? '');
      return match !== null && Number(match[1]) > 0;
    },
    async remove() {
      let last = '';
      for (let attempt = 0; attempt < REMOVE_ATTEMPTS; attempt++) {
        try {
          await rmdir(dir);
          return;
        } catch (err) {
          last = errnoOf(err);
          if (last === 'ENOENT') return;
          // EBUSY while the kernel finishes reaping the killed process. ENOTEMPTY only happens outside
          // cgroupfs (a plain directory tree, e.g. in tests), where the files are ordinary files.
          if (last === 'ENOTEMPTY') {
            await rm(dir, { recursive: true, force: true }).catch((rmErr: unknown) =>
              logger.warn('cgroup not removed', { path: dir, errno: errnoOf(rmErr) }),
            );
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, REMOVE_RETRY_MS));
        }
      }
      logger.warn('cgroup not removed', { path: dir, errno: last, attempts: REMOVE_ATTEMPTS });
    },
  };
}
