// `tools-runner call <tool> [json|-]`: writes a tool.request.v1, waits for its tool.response.v1,
// prints the response context as JSON; exit 0 on success, 1 on an error response (or a request the
// store refused), 2 on bad input, 3 on timeout, 4 when no store is reachable.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { openEventStream } from '../../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolResponseContext, type ToolResponseContext as Response } from '../../breadcrumbs/messages.js';
import { EXIT, type CommandContext } from '../command.js';
import { safeJson } from '../sanitize.js';
import { cliStoreClient, exitForStoreProblem } from '../store-client.js';

function parseInput(raw: string | undefined): unknown {
  if (raw === undefined) return {};
  const text = raw === '-' ? readFileSync(0, 'utf8') : raw;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`input is not valid JSON (${(error as Error).message}): ${text.slice(0, 200)}`);
  }
}

/** After this long without an answer, `call` follows the event stream instead of polling quickly. */
const STREAM_AFTER_MS = 1_000;

/** Waits `ms` or until `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Runs `tools-runner call`. */
export async function run({ config, positionals, logger, out, err, signal }: CommandContext): Promise<number> {
  const [tool, raw, extra] = positionals;
  if (!tool || extra !== undefined) {
    err(`usage: tools-runner call <tool> [json | -]${extra !== undefined ? ` (unexpected argument ${JSON.stringify(extra)}; quote the JSON input)` : ''}`);
    return EXIT.Usage;
  }
  let input: unknown;
  try {
    input = parseInput(raw);
  } catch (error) {
    err(`tools-runner call: ${(error as Error).message}`);
    return EXIT.Usage;
  }
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['emitter', 'subscriber']);
  const rid = randomUUID();
  const stop = new AbortController();
  const done = AbortSignal.any([stop.signal, signal, AbortSignal.timeout(config.callTimeoutMs)]);
  let response: Response | undefined;
  const check = async (): Promise<void> => {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolResponse, tag: TAG.request(rid), include_context: true, limit: 1 });
    const parsed = ToolResponseContext.safeParse(items[0]?.context);
    if (parsed.success) {
      response = parsed.data;
      stop.abort();
    }
  };
  const body = {
    title: `Request: ${tool}`,
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, config.workspace],
    context: { tool, input, requestId: rid, requestedBy: 'tools-runner-cli' },
  };
  try {
    // Mint the token first: an absent store or refused credentials end here, in one line.
    await client.token();
    try {
      await client.createBreadcrumb(body);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 413) {
        const bytes = Buffer.byteLength(JSON.stringify(body));
        err(`tools-runner call: the store refused the request with HTTP 413 (payload too large): the request is ${bytes} bytes, over the store's body limit. Send a smaller input, or raise the limit with --max-body-bytes (TOOLS_RUNNER_MAX_BODY_BYTES) on the process that runs the store.`);
        return EXIT.Failed;
      }
      throw error;
    }
    // A quick tool answers within milliseconds: poll with a growing interval first. A call still
    // running after STREAM_AFTER_MS follows the event stream instead (plus a slow poll, in case the
    // stream is not connected), so long calls cost no busy polling.
    let waited = 0;
    let interval = 4;
    let streaming = false;
    while (!done.aborted) {
      await pause(interval, done);
      waited += interval;
      if (!response && !done.aborted) await check().catch(() => {});
      if (!streaming && !done.aborted && waited >= STREAM_AFTER_MS) {
        streaming = true;
        openEventStream({
          client,
          signal: done,
          logger,
          onEvent: (event) => {
            if (event.schema_name !== SCHEMA.ToolResponse || !event.tags?.includes(TAG.request(rid))) return;
            // The creation event carries the answer: take it from there, so an answer written just
            // before an embedded store shuts down (a runner draining on Ctrl-C) still arrives.
            const carried = ToolResponseContext.safeParse(event.context);
            if (carried.success && carried.data.request_id === rid) {
              response = carried.data;
              stop.abort();
            } else {
              void check().catch(() => {});
            }
          },
        });
      }
      interval = streaming ? 1_000 : Math.min(interval * 2, 250);
    }
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, 'call');
  } finally {
    stop.abort();
    client.close();
  }
  if (!response) {
    if (signal.aborted) return EXIT.Interrupted;
    err(`tools-runner call: no response for request ${rid} within ${config.callTimeoutMs} ms (is a runner serving ${config.workspace}? --call-timeout-ms to wait longer)`);
    return EXIT.Timeout;
  }
  out(safeJson(response, 2));
  return response.status === 'success' ? EXIT.Ok : EXIT.Failed;
}
