// `tools-runner call <tool> [json|-]`: writes a tool.request.v1, waits for its tool.response.v1,
// prints the runner's verified response context as JSON (forged answers are ignored); exit 0 on success, 1 on an error response (or a request the
// store refused), 2 on bad input, 3 on timeout, 4 when no store is reachable.

import { readFileSync } from 'node:fs';
import { createRequestClient, openEventStream, type WrittenRequest } from '../../breadcrumbs/index.js';
import type { ToolResponseContext as Response } from '../../breadcrumbs/messages.js';
import { resolveRequestKeys } from '../../catalog/runner-key.js';
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

/** After this long without an answer, `call` also follows the event stream (polls slow down to 1 s). */
const STREAM_AFTER_MS = 1_000;

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
  // The runner's keys: only an answer carrying the runner's answer tag is printed (anyone can write a
  // tool.response.v1 tagged request:<rid>).
  let keys;
  try {
    keys = resolveRequestKeys({ runnerSecret: config.runnerSecret, dataDir: config.dataDir, logger, storeUrl: config.storeUrl });
  } catch (error) {
    err(`tools-runner call: ${(error as Error).message}`);
    return EXIT.Usage;
  }
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['emitter', 'subscriber']);
  const requests = createRequestClient({ client, keys, workspace: config.workspace, pollMaxMs: STREAM_AFTER_MS });
  const stop = new AbortController();
  let response: Response | undefined;
  let written: WrittenRequest | undefined;
  const call = { tool, input, requestedBy: 'tools-runner-cli', ...(config.callIsolation ? { context: { isolation: config.callIsolation } } : {}) };
  try {
    // Mint the token first: an absent store or refused credentials end here, in one line.
    await client.token();
    try {
      written = await requests.write(call);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 413) {
        const bytes = Buffer.byteLength(JSON.stringify(call));
        err(`tools-runner call: the store refused the request with HTTP 413 (payload too large): the request is ${bytes} bytes, over the store's body limit. Send a smaller input, or raise the limit with --max-body-bytes (TOOLS_RUNNER_MAX_BODY_BYTES) on the process that runs the store.`);
        return EXIT.Failed;
      }
      throw error;
    }
    // A quick tool answers within milliseconds (the client's first polls); a call still running after
    // STREAM_AFTER_MS is also followed on the event stream, so long calls cost no busy polling.
    const streamTimer = setTimeout(() => {
      openEventStream({ client, signal: stop.signal, logger, onEvent: (event) => requests.handleEvent(event), onConnected: () => requests.onReconnect() });
    }, STREAM_AFTER_MS);
    const outcome = await requests.wait(written, { timeoutMs: config.callTimeoutMs, signal }).finally(() => clearTimeout(streamTimer));
    if (outcome.kind === 'answered') response = outcome.answer;
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, 'call');
  } finally {
    stop.abort();
    requests.close();
    client.close();
  }
  if (!response) {
    if (signal.aborted) return EXIT.Interrupted;
    err(`tools-runner call: no response for request ${written?.rid} within ${config.callTimeoutMs} ms (is a runner serving ${config.workspace}? --call-timeout-ms to wait longer)`);
    return EXIT.Timeout;
  }
  out(safeJson(response, 2));
  return response.status === 'success' ? EXIT.Ok : EXIT.Failed;
}
