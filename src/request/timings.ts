// Stage timings of one request: where its time went, in milliseconds, from the moment intake
// learned of it (event or scan) to its answer. One stopwatch per job, passed to the executors in
// RunContext; the handler marks laps between its steps, the executors add what they measure inside
// (secrets, the wait for a sandbox process, the run itself).
//
// The answer carries every stage but `respond` (writing the answer cannot be part of the answer it
// measures); the ExecutionReport (Prometheus histogram, console) carries all of them.

/** The stages, in the order a request lives through them. */
export const STAGES = [
  'queued',
  'claim',
  'route',
  'validate',
  'policy',
  'secrets',
  'sandbox_wait',
  'sandbox_run',
  'respond',
] as const;

/** One stage of a request's life. */
export type Stage = (typeof STAGES)[number];

/** Milliseconds per stage (3 decimals). */
export type StageTimings = Record<Stage, number>;

/** What a tool.response.v1 carries in `metadata.timings`: every stage but `respond`. */
export type AnswerTimings = Omit<StageTimings, 'respond'>;

/** The stopwatch of one request. */
export interface Stopwatch {
  /** Adds `ms` to `stage` (negative or non-finite values count as 0). */
  add(stage: Stage, ms: number): void;
  /** Adds the time since the last lap (or mark) to `stage` and starts a new lap. */
  lap(stage: Stage): void;
  /** Starts a new lap without counting the time since the last one (it was counted elsewhere). */
  mark(): void;
  /** What `stage` holds so far. */
  get(stage: Stage): number;
  /** Every stage, rounded to 3 decimals. */
  all(): StageTimings;
  /** Every stage but `respond`, rounded to 3 decimals (for the answer's metadata). */
  forAnswer(): AnswerTimings;
}

const round3 = (ms: number): number => Math.round(ms * 1000) / 1000;

// The objects below are object literals with the stages in STAGES' order (not built from STAGES at
// run time): each is created per request, and a literal gets one hidden class at once where
// Object.fromEntries and a rest spread go through V8's slow property-definition path (a c16 profile
// showed them among the runtime calls of the per-call path; bench/journal/2026-11-rounds.md, "JIT and shapes").

/**
 * Starts a stopwatch now; `learnedAt` (performance.now() when intake learned of the request) sets
 * `queued` to the time between then and now.
 */
export function createStopwatch(learnedAt?: number, clock: () => number = () => performance.now()): Stopwatch {
  const totals: StageTimings = {
    queued: 0,
    claim: 0,
    route: 0,
    validate: 0,
    policy: 0,
    secrets: 0,
    sandbox_wait: 0,
    sandbox_run: 0,
    respond: 0,
  };
  let last = clock();
  const add = (stage: Stage, ms: number): void => {
    if (Number.isFinite(ms) && ms > 0) totals[stage] += ms;
  };
  if (learnedAt !== undefined) add('queued', last - learnedAt);
  const forAnswer = (): AnswerTimings => ({
    queued: round3(totals.queued),
    claim: round3(totals.claim),
    route: round3(totals.route),
    validate: round3(totals.validate),
    policy: round3(totals.policy),
    secrets: round3(totals.secrets),
    sandbox_wait: round3(totals.sandbox_wait),
    sandbox_run: round3(totals.sandbox_run),
  });
  return {
    add,
    lap(stage) {
      const now = clock();
      add(stage, now - last);
      last = now;
    },
    mark() {
      last = clock();
    },
    get: (stage) => totals[stage],
    all: () => {
      // the answer's literal, then one store: every result shares one hidden class (no spread)
      const timings = forAnswer() as StageTimings;
      timings.respond = round3(totals.respond);
      return timings;
    },
    forAnswer,
  };
}
