// `tools-runner call <tool> [json|-]`: writes a tool.request.v1, waits for its tool.response.v1,
// prints the runner's verified response context as JSON (forged answers are ignored); exit 0 on success, 1 on an error response (or a request the
// store refused), 2 on bad input, 3 on timeout, 4 when no store is reachable.

import { readFileSync } from 'node:fs';
import { createRequestClient, openEventStream, type WrittenRequest } from '../../breadcrumbs/index.js';
import { SCHEMA, type StoreEvent, type ToolResponseContext as Response } from '../../breadcrumbs/messages.js';
import { progressTag } from '../../request/progress.js';
import { EXIT, type CommandContext } from '../command.js';
import { safeJson } from '../sanitize.js';
import { stripUnsafe } from '../../text.js';
import { ErrorCode } from '../../errors.js';
import { Execution, failure, failureText, withExecution } from '../../result.js';
import { cliKeys, cliStoreClient, exitForStoreProblem } from '../store-client.js';

function parseInput(raw: string | undefined): unknown {
  if (raw === undefined) return {};
  const text = raw === '-' ? readFileSync(0, 'utf8') : raw;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`input is not valid JSON (${(error as Error).message}): ${text.slice(0, 200)}`);
  }
}

/** After this long without an answer, `call` also follows the event stream (polls slow down to 1 s). */
const STREAM_AFTER_MS = 1_000;

/** Runs `tools-runner call`. */
export async function run({ config, positionals, logger, out, err, signal, force }: CommandContext): Promise<number> {
  const [tool, raw, extra] = positionals;
  if (!tool || extra !== undefined) {
    err(
      `usage: tools-runner call <tool> [json | -]${extra !== undefined ? ` (unexpected argument ${JSON.stringify(extra)}; quote the JSON input)` : ''}`,
    );
    return EXIT.Usage;
  }
  let input: unknown;
  try {
    input = parseInput(raw);
  } catch (error) {
    err(`tools-runner call: ${(error as Error).message}`);
    return EXIT.Usage;
  }
  // The runner's keys: only an answer carrying the runner's answer tag is printed, and only progress
  // carrying its progress tag is shown (anyone can write records tagged request:<rid>).
  const keys = cliKeys({ config, logger }, 'call');
  if (typeof keys === 'string') {
    err(keys);
    return EXIT.Usage;
  }
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['emitter', 'subscriber']);
  const requests = createRequestClient({ client, keys, workspace: config.workspace, pollMaxMs: STREAM_AFTER_MS });
  const stop = new AbortController();
  let response: Response | undefined;
  let written: WrittenRequest | undefined;
  let cancelled = false;
  const call = {
    tool,
    input,
    requestedBy: 'tools-runner-cli',
    ...(config.callIsolation ? { context: { isolation: config.callIsolation } } : {}),
  };

  // --call-progress: the runner's tool.progress.v1 reports of this request, printed to stderr.
  let midLine = false; // a text report ended without a newline
  let progressSeq = 0;
  const early: StoreEvent[] = []; // progress seen before the request's breadcrumb id was known (bounded)
  const showProgress = (event: StoreEvent): void => {
    if (!written) {
      if (early.length < 64) early.push(event);
      return;
    }
    if (!event.tags?.includes(progressTag(keys, written.breadcrumbId))) return;
    const c = event.context as { request_id?: unknown; events?: unknown } | undefined;
    if (c?.request_id !== written.rid || !Array.isArray(c.events)) return;
    for (const item of c.events as Array<{ seq?: unknown; value?: unknown }>) {
      if (typeof item?.seq !== 'number' || item.seq <= progressSeq) continue;
      progressSeq = item.seq;
      const value = item.value as { text?: unknown } | null;
      if (value !== null && typeof value === 'object' && typeof value.text === 'string') {
        process.stderr.write(stripUnsafe(value.text, true));
        midLine = !value.text.endsWith('\n');
      } else {
        if (midLine) process.stderr.write('\n');
        err(safeJson(item.value));
        midLine = false;
      }
    }
  };
  const follow = (onConnected?: () => void): void => {
    openEventStream({
      client,
      signal: stop.signal,
      logger,
      onConnected: () => {
        requests.onReconnect();
        onConnected?.();
      },
      onEvent: (event) => {
        requests.handleEvent(event);
        if (config.callProgress && event.schema_name === SCHEMA.ToolProgress) showProgress(event);
      },
    });
  };
  let streamTimer: NodeJS.Timeout | undefined;
  try {
    // Mint the token first: an absent store or refused credentials end here, in one line.
    await client.token();
    // --call-progress follows the stream before the request exists (the stream has no replay).
    if (config.callProgress) {
      await new Promise<void>((resolve) => {
        follow(resolve);
        setTimeout(resolve, 5_000).unref();
      });
    }
    try {
      written = await requests.write(call);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 413) {
        const bytes = Buffer.byteLength(JSON.stringify(call));
        err(
          `tools-runner call: the store refused the request with HTTP 413 (payload too large): the request is ${bytes} bytes, over the store's body limit. Send a smaller input, or raise the limit with --max-body-bytes (TOOLS_RUNNER_MAX_BODY_BYTES) on the process that runs the store.`,
        );
        return EXIT.Failed;
      }
      throw error;
    }
    for (const event of early.splice(0)) showProgress(event);
    // A quick tool answers within milliseconds (the client's first polls); a call still running after
    // STREAM_AFTER_MS is also followed on the event stream, so long calls cost no busy polling.
    if (!config.callProgress) streamTimer = setTimeout(() => follow(), STREAM_AFTER_MS);
    const startedAt = Date.now();
    let outcome = await requests.wait(written, { timeoutMs: config.callTimeoutMs, signal });
    // Ctrl-C: the request stays in the store and goes on; a second Ctrl-C withdraws it.
    if (outcome.kind === 'cancelled' && /SIGINT/.test(String((signal.reason as Error | undefined)?.message))) {
      err(
        `tools-runner call: request ${written.rid} goes on: a runner may still run it and answer it in the store. Still waiting; Ctrl-C again withdraws it.`,
      );
      const left = Math.max(0, config.callTimeoutMs - (Date.now() - startedAt));
      outcome = await requests.wait(written, { timeoutMs: left, signal: force });
      if (force.aborted && outcome.kind !== 'answered') {
        const gone = await requests.withdraw(written);
        err(
          gone
            ? `tools-runner call: request ${written.rid} withdrawn (deleted from the store): a runner will not start it, nor answer it.`
            : `tools-runner call: request ${written.rid} was already gone from the store.`,
        );
        return EXIT.Interrupted;
      }
    }
    if (outcome.kind === 'answered') response = outcome.answer;
    cancelled = outcome.kind === 'cancelled';
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, 'call');
  } finally {
    clearTimeout(streamTimer);
    stop.abort();
    requests.close();
    client.close();
  }
  if (midLine) process.stderr.write('\n');
  if (!response) {
    if (cancelled) return EXIT.Interrupted;
    // The request is in the store: a runner may run it (or have run it) still.
    const late = failure(
      ErrorCode.Timeout,
      `no response for request ${written?.rid} within ${config.callTimeoutMs} ms; the request stays in the store and may still be answered (is a runner serving ${config.workspace}? --call-timeout-ms to wait longer)`,
    );
    err(`tools-runner call: ${failureText(withExecution(late, Execution.MayHaveRun))}`);
    return EXIT.Timeout;
  }
  out(safeJson(response, 2));
  return response.status === 'success' ? EXIT.Ok : EXIT.Failed;
}
