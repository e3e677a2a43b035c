// Progress of a running code-tool call for the admin port's live feed (`execution:progress` on
// /live, printed by `tools-runner tail`). The values arrive with the tool's secrets already redacted
// (the sandbox redacts each report before onProgress).
//
// Bounded so a chatty tool cannot flood /live: per call at most one report per LIVE_INTERVAL_MS goes
// out; a report arriving sooner waits, replaced by any newer one (the skipped reports show as gaps in
// `seq`, which numbers every report of the call like tool.progress.v1 does), and `close()` sends the
// one still waiting, so the last report precedes the call's finish. A value whose JSON is longer than
// LIVE_MAX_CHARS is cut: a `{text}` report keeps the start of its text, any other becomes
// `{truncated: true, chars, preview}`.

export const LIVE_INTERVAL_MS = 200;
export const LIVE_MAX_CHARS = 1024;

/** One report as the live feed carries it. */
export interface LiveProgressReport {
  rid: string;
  tool: string;
  seq: number;
  value: unknown;
}

/** A report's value within LIVE_MAX_CHARS of JSON. */
export function liveValue(value: unknown): unknown {
  const json = JSON.stringify(value) ?? 'null';
  if (json.length <= LIVE_MAX_CHARS) return value;
  const text = (value as { text?: unknown } | null)?.text;
  if (typeof text === 'string' && Object.keys(value as object).length === 1) return { text: `${text.slice(0, LIVE_MAX_CHARS - 32)}… (${text.length} chars)` };
  return { truncated: true, chars: json.length, preview: json.slice(0, LIVE_MAX_CHARS / 2) };
}

/** The live reporter of one call. */
export interface LiveProgress {
  push(value: unknown): void;
  close(): void;
}

export function createLiveProgress(options: { rid: string; tool: string; emit(report: LiveProgressReport): void; intervalMs?: number }): LiveProgress {
  const intervalMs = options.intervalMs ?? LIVE_INTERVAL_MS;
  let seq = 0;
  let lastSent = -Infinity;
  let waiting: { seq: number; value: unknown } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const send = (report: { seq: number; value: unknown }): void => {
    lastSent = performance.now();
    try {
      options.emit({ rid: options.rid, tool: options.tool, seq: report.seq, value: liveValue(report.value) });
    } catch {
      // a listener's fault is not the tool's
    }
  };
  const flush = (): void => {
    timer = undefined;
    const report = waiting;
    waiting = undefined;
    if (report) send(report);
  };

  return {
    push(value) {
      if (closed) return;
      seq++;
      const since = performance.now() - lastSent;
      if (since >= intervalMs && !timer) return send({ seq, value });
      waiting = { seq, value };
      timer ??= setTimeout(flush, Math.max(0, intervalMs - since));
    },
    close() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      flush();
    },
  };
}
