// Process groups. Every child the runner starts (sandbox Deno processes, host programs) is spawned
// detached, so it leads a process group of its own; it is always ended with SIGKILL to that whole
// group, so that helpers it started (which would hold our pipes open) die with it. A program that
// calls setsid() leaves the group; only a cgroup stops that.

/** SIGKILLs the process group led by `pid`; false when there is none (never started, or already gone). */
export function killGroup(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    // ESRCH: the group is already gone (EPERM cannot happen for our own children).
    return false;
  }
}
