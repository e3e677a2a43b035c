// CPU of process trees from /proc (Linux), for the benches: a runner with its Node helper and its
// Deno processes, or a PostgreSQL server with its backends.
//
// /proc/<pid>/stat fields 14-17 are utime, stime, cutime, cstime in USER_HZ ticks (100 per second);
// the command name (field 2) is in parentheses and may hold spaces. cutime/cstime are the CPU of
// children the process has reaped, so a tree's "utime+stime+cutime+cstime summed over its live
// processes" only grows: a child that exits moves its CPU into its parent's share. The delta of
// that sum over a window is the whole tree's CPU in the window, short-lived children included.
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 1000 / 100;

/** { comm, session, selfMs (utime+stime), reapedMs (cutime+cstime) } of `pid`; throws once it exited. */
export function statOf(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    comm,
    session: Number(fields[3]),
    selfMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS,
    reapedMs: (Number(fields[13]) + Number(fields[14])) * TICK_MS,
  };
}

/** The live children of `pid` (empty once it exited). */
export function childrenOf(pid) {
  const out = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) out.push(...text.split(' ').map(Number));
    }
  } catch {
    // exited meanwhile
  }
  return out;
}

/**
 * CPU ms of the tree under `pid`: `total` (every process, reaped children included) and `node`
 * (utime+stime of the Node processes only: the runner and its spawner helper, as bench/e2e.mjs
 * counts "runner CPU"; never the Deno processes).
 */
export function treeCpuMs(pid) {
  let total = 0;
  let node = 0;
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop();
    try {
      const s = statOf(p);
      total += s.selfMs + s.reapedMs;
      if (p === pid || s.comm === 'node') node += s.selfMs;
    } catch {
      continue; // exited meanwhile (its CPU is now its parent's reaped share, read or not)
    }
    stack.push(...childrenOf(p));
  }
  return { total, node };
}
