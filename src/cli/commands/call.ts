// `tools-runner call <tool> [json|-]`: writes a tool.request.v1, waits for its tool.response.v1,
// prints the response context as JSON; exit 0 on success, 1 on an error response, 3 on timeout.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { openEventStream } from '../../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolResponseContext, type ToolResponseContext as Response } from '../../breadcrumbs/messages.js';
import type { Command } from '../command.js';
import { cliStoreClient } from '../store-client.js';

function parseInput(raw: string | undefined): unknown {
  if (raw === undefined) return {};
  const text = raw === '-' ? readFileSync(0, 'utf8') : raw;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`input is not valid JSON (${(error as Error).message}): ${text.slice(0, 200)}`);
  }
}

export const callCommand: Command = {
  name: 'call',
  summary: 'run a tool through the store and print its response',
  usage: 'tools-runner call <tool> [json | -] [--store-url URL] [--call-timeout-ms MS]',
  async run({ config, positionals, logger, out, err, signal }) {
    const [tool, raw] = positionals;
    if (!tool) {
      err(`usage: ${callCommand.usage}`);
      return 2;
    }
    let input: unknown;
    try {
      input = parseInput(raw);
    } catch (error) {
      err(`tools-runner call: ${(error as Error).message}`);
      return 2;
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

    const connected = new Promise<void>((resolve) => {
      openEventStream({
        client,
        signal: done,
        logger,
        onConnected: () => resolve(),
        onEvent: (event) => {
          if (event.schema_name === SCHEMA.ToolResponse && event.tags?.includes(TAG.request(rid))) void check().catch(() => {});
        },
      });
    });
    await Promise.race([connected, new Promise((r) => setTimeout(r, 2_000).unref())]);
    await client.createBreadcrumb({
      title: `Request: ${tool}`,
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, config.workspace],
      context: { tool, input, requestId: rid, requestedBy: 'tools-runner-cli' },
    });
    // The stream delivers the answer; a slow poll covers a stream that is not connected.
    while (!done.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1_000);
        done.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
      if (!response && !done.aborted) await check().catch(() => {});
    }
    if (!response) {
      err(`tools-runner call: no response for request ${rid} within ${config.callTimeoutMs} ms`);
      return 3;
    }
    out(JSON.stringify(response, null, 2));
    return response.status === 'success' ? 0 : 1;
  },
};
