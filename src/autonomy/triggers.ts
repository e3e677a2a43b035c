// Requests the runner writes on its own (docs/autonomy.md): a subscription's trigger and an operator
// tool's `once` bootstrap run. Each is an ordinary tool.request.v1 sealed with its origin
// (src/tool-context/origin.ts) and written with an Idempotency-Key derived from the runner secret and
// what makes it unique — (subscription, trigger breadcrumb) or (tool, deployed version) — so every
// replica may write it and the store keeps exactly one (a 409 means another replica, or this one
// before a restart, already did). The request then takes the one request path like any other.

import { isConflict, type RequestClient, type RequestKeys } from '../breadcrumbs/index.js';
import { sealOrigin, type RequestOrigin } from '../tool-context/origin.js';

/** How a write ended: `written` (this replica wrote it) or `exists` (someone already had). */
export type TriggerWrite = 'written' | 'exists';

/** Writes the sealed request `kind`/`unique` names, once across replicas and restarts. */
export async function writeOwnRequest(
  deps: { requests: RequestClient; keys: Pick<RequestKeys, 'stateMac'> },
  call: {
    tool: string;
    input: Record<string, unknown>;
    origin: RequestOrigin;
    unique: readonly string[];
    signal?: AbortSignal;
  },
): Promise<TriggerWrite> {
  const digest = deps.keys.stateMac(`own-request:${call.origin.kind}`, JSON.stringify(call.unique)).slice(0, 32);
  const rid = `${call.origin.kind}-${digest}`;
  const writer = await deps.requests.writer();
  const origin: RequestOrigin = writer !== undefined ? { ...call.origin, writer } : call.origin;
  try {
    await deps.requests.write(
      {
        rid,
        tool: call.tool,
        input: call.input,
        requestedBy: call.origin.agent ?? `runner:${call.origin.kind}`,
        ...(call.origin.agent !== undefined ? { tags: [`agent:${call.origin.agent}`] } : {}),
        context: { origin: sealOrigin(deps.keys, { rid, tool: call.tool, input: call.input }, origin) },
      },
      { idempotencyKey: `${call.origin.kind}-${digest}`, ...(call.signal ? { signal: call.signal } : {}) },
    );
    return 'written';
  } catch (error) {
    if (isConflict(error)) return 'exists';
    throw error;
  }
}
