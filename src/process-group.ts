// Process groups. A child that can start programs of its own (host programs; a sandbox granted `run`)
// is spawned detached, so it leads a process group of its own; it is always ended with SIGKILL to that
// whole group, so that helpers it started (which would hold our pipes open) die with it. A program
// that calls setsid() leaves the group; only a cgroup stops that. Every other sandbox process stays in
// its launcher's session and group (command.ts `ownGroup`) and is signalled by its pid.
//
// A child started through the setsid program (the Deno relay launcher's children) leads its group only
// once setsid has run: for the first moments after the spawn (the exec of setsid) there is no group of
// its pid yet, and a group kill then finds nothing. Such a child is killed by its pid: it is still in
// its parent's session, which /proc/<pid>/stat tells.

import { readFileSync } from 'node:fs';

/**
 * SIGKILLs the process group led by `pid` — or `pid` itself while it has not yet made its own session
 * (see above); false when there is neither (never started, or already gone).
 */
export function killGroup(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    // ESRCH: no group of that id (EPERM cannot happen for our own children)
  }
  if (!beforeItsSession(pid)) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends `signal` to `pid`'s process group when it leads one (`grouped`), else to `pid` alone; false when
 * there is nothing to signal (gone). Callers signal only processes whose exit they have not seen yet.
 */
export function signalProcess(pid: number, grouped: boolean, signal: NodeJS.Signals): boolean {
  try {
    process.kill(grouped ? -pid : pid, signal);
    return true;
  } catch {
    // ESRCH: gone (EPERM cannot happen for our own children)
    return false;
  }
}

/** Whether `pid` is a live process that does not lead its own session yet (false when it is gone). */
function beforeItsSession(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false;
  }
  // after the parenthesised name: state, ppid, pgrp, session, ...
  const [state, , , session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return state !== 'Z' && Number(session) !== pid;
}
