// Waits on events, never on the clock: `until` polls a condition with a bound, and the runner's admin
// /health tells when its catch-up scans have passed and its queue is idle — the evidence that work
// which would have happened (a re-run, a takeover, a second answer) has had its chance.

/** Polls `probe` until it returns a value other than undefined/false; throws naming `what` after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The part of the runner's admin /health these waits read. */
export interface RunnerHealth {
  queue: { queued: number; running: number };
  intake: { pending: number; parked: number; lastScanAt?: string };
}

/** The runner's admin /health. */
export async function runnerHealth(adminUrl: string): Promise<RunnerHealth> {
  const response = await fetch(new URL('/health', adminUrl));
  return (await response.json()) as RunnerHealth;
}

/**
 * Resolves once `n` catch-up scans that started at or after `since` (epoch ms, this machine's clock,
 * which the runner shares) have completed. A scan finds unanswered requests and expired claims, so
 * after it whatever it would re-run is already queued.
 */
export async function untilScans(adminUrl: string, n: number, since = Date.now(), timeoutMs = 60_000): Promise<void> {
  const seen = new Set<string>();
  await until(
    `${n} scans after ${new Date(since).toISOString()}`,
    async () => {
      const at = (await runnerHealth(adminUrl)).intake.lastScanAt;
      if (at !== undefined && Date.parse(at) >= since) seen.add(at);
      return seen.size >= n;
    },
    timeoutMs,
    20,
  );
}

/** Resolves once the runner holds no job: nothing queued, running or waiting in intake. */
export async function untilIdle(adminUrl: string, timeoutMs = 60_000): Promise<void> {
  await until(
    'the runner idle',
    async () => {
      const { queue, intake } = await runnerHealth(adminUrl);
      return queue.queued === 0 && queue.running === 0 && intake.pending === 0;
    },
    timeoutMs,
  );
}

/**
 * Resolves once the runner has had every chance to do more: two scans started after `since` (one
 * whole interval, whatever the phase), then an idle queue, so a job those scans queued has finished.
 */
export async function untilSettled(adminUrl: string, since = Date.now(), timeoutMs = 60_000): Promise<void> {
  await untilScans(adminUrl, 2, since, timeoutMs);
  await untilIdle(adminUrl, timeoutMs);
}
