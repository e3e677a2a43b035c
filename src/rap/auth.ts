// Who may use the RAP tool server's routes (`/invoke`, `/cancel_tool_call`, `/close_thread`).
//
// With `--rap-tokens caller=token,...`: every such request needs `Authorization: Bearer <token>`
// (401 otherwise, naming what is wrong but never a token); the token names the caller, and each
// invocation is bound to that caller: only it can re-invoke (re-attach, change the callback URL),
// cancel or close its calls and threads. Another caller's id is, to everyone else, an id never
// seen (a new invocation of their own; a cancel that finds nothing), so no answer tells whether
// it exists.
// Without tokens the tool server is served on a loopback listener only (startup refuses a
// non-loopback `--rap-host` otherwise) and every local client is one anonymous caller; what stops a
// web page in the operator's browser is checked here: the Host must name the listener (loopback
// name with its port, or the `--rap-public-url` host). In both modes a request carrying an Origin
// header (a web page's) is refused (403).
// The toolset document (`/.well-known/rap-toolset`) stays readable: a runtime reads it before any call.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ErrorCode, RunnerError } from '../errors.js';
import { HttpError } from '../http.js';

/** The caller a request was authenticated as; `anonymous` when no tokens are configured. */
export interface RapPrincipal {
  caller: string;
  /** Whether the caller proved itself with a token (else: the one anonymous local caller). */
  verified: boolean;
}

export interface RapAuth {
  /** Whether tokens are configured. */
  readonly required: boolean;
  /** The caller of a tool server request; throws HttpError 401/403. */
  authenticate(req: IncomingMessage): RapPrincipal;
  /** The listener's port (known once it listens; the Host check needs it). */
  setPort(port: number): void;
}

const CALLER = /^[A-Za-z0-9_.@:-]{1,64}$/;
const MIN_TOKEN = 16;

const digest = (value: string): Buffer => createHash('sha256').update(`tools-runner-rap:${value}`).digest();

/** Parses `--rap-tokens` entries (`caller=token`); throws ConfigInvalid naming the entry (never the token). */
export function parseRapTokens(entries: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  entries.forEach((entry, index) => {
    const eq = entry.indexOf('=');
    const caller = eq === -1 ? '' : entry.slice(0, eq).trim();
    const token = eq === -1 ? '' : entry.slice(eq + 1).trim();
    if (!CALLER.test(caller)) {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-tokens entry ${index + 1} must be "caller=token" with a caller of 1-64 characters [A-Za-z0-9_.@:-], got caller ${JSON.stringify(caller.slice(0, 80))}`,
      );
    }
    if (token.length < MIN_TOKEN)
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-tokens: the token of caller "${caller}" is shorter than ${MIN_TOKEN} characters`,
      );
    if (out.has(caller)) throw new RunnerError(ErrorCode.ConfigInvalid, `--rap-tokens names caller "${caller}" twice`);
    if ([...out.values()].includes(token))
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-tokens: caller "${caller}" has the same token as another caller; every caller needs its own`,
      );
    out.set(caller, token);
  });
  return out;
}

function hostParts(header: string): { name: string; port: string | undefined } {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const close = h.indexOf(']');
    const rest = close === -1 ? '' : h.slice(close + 1);
    return {
      name: h.slice(1, close === -1 ? undefined : close),
      port: rest.startsWith(':') ? rest.slice(1) : undefined,
    };
  }
  const colon = h.lastIndexOf(':');
  return colon === -1 ? { name: h, port: undefined } : { name: h.slice(0, colon), port: h.slice(colon + 1) };
}

/** Builds the tool server's gate; `publicHost` is the host[:port] of `--rap-public-url`, when set. */
export function createRapAuth(options: { tokens: ReadonlyMap<string, string>; publicHost?: string }): RapAuth {
  const callers = [...options.tokens].map(([caller, token]) => ({ caller, digest: digest(token) }));
  let port: string | undefined;
  const publicHost = options.publicHost?.toLowerCase();

  const fromToken = (req: IncomingMessage): RapPrincipal => {
    const auth = req.headers.authorization;
    if (auth === undefined)
      throw new HttpError(
        401,
        'unauthorized',
        'the RAP tool server requires "Authorization: Bearer <token>" (a token of --rap-tokens)',
      );
    const match = /^Bearer (\S+)$/.exec(auth);
    if (!match) throw new HttpError(401, 'unauthorized', 'malformed Authorization header; expected "Bearer <token>"');
    const given = digest(match[1] as string);
    let found: string | undefined;
    for (const entry of callers) if (timingSafeEqual(entry.digest, given)) found ??= entry.caller;
    if (found === undefined)
      throw new HttpError(401, 'unauthorized', 'the bearer token is not a token of this RAP tool server');
    return { caller: found, verified: true };
  };

  const local = (req: IncomingMessage): RapPrincipal => {
    const host = req.headers.host ?? '';
    const { name, port: given } = hostParts(host);
    const loopback =
      (name === '127.0.0.1' || name === 'localhost' || name === '::1') && given !== undefined && given === port;
    if (!loopback && host.toLowerCase() !== publicHost) {
      throw new HttpError(
        403,
        'host_not_allowed',
        `Host ${JSON.stringify(host.slice(0, 200))} is not this RAP listener; without --rap-tokens it answers only to 127.0.0.1, localhost and [::1] with its port ${port ?? '?'}${publicHost ? ` and to ${publicHost}` : ''}`,
      );
    }
    return { caller: 'anonymous', verified: false };
  };

  return {
    required: callers.length > 0,
    authenticate(req) {
      // RAP clients are servers, never web pages: a browser's request (it carries an Origin) is refused.
      const origin = req.headers.origin;
      if (origin !== undefined)
        throw new HttpError(
          403,
          'origin_not_allowed',
          `requests from a web page (Origin ${JSON.stringify(origin.slice(0, 200))}) are refused by the RAP tool server`,
        );
      return callers.length > 0 ? fromToken(req) : local(req);
    },
    setPort(value) {
      port = String(value);
    },
  };
}
