// Calls of the console's JSON API; errors carry the server's code and message.

/** An API error: HTTP status, the server's code, its message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** GET or POST a JSON API path; throws ApiError on a non-2xx reply (a 401 reloads to the login page). */
export async function api<T = any>(path: string, body?: unknown, init: { allow?: number[] } = {}): Promise<T> {
  const res = await fetch(
    `/api${path}`,
    body === undefined
      ? { credentials: 'same-origin' }
      : {
          method: 'POST',
          credentials: 'same-origin',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        },
  );
  const data = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.status === 401) {
    location.reload();
  }
  if (!res.ok && !(init.allow ?? []).includes(res.status)) {
    throw new ApiError(res.status, String(data['code'] ?? res.status), String(data['error'] ?? res.statusText), data);
  }
  return data as T;
}

/** Waits `ms` milliseconds. */
export const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `fn` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function poll<T>(fn: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`);
    await wait(everyMs);
  }
}
