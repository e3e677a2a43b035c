// Who may use the admin port: every route on it (the console, its API, `/live`, `/metrics`,
// `/health` and the routes extensions add, such as `/mcp`) passes this one guard.
//
// Host (DNS rebinding): without an admin token the Host header must name the admin port itself —
// `127.0.0.1`, `localhost` or `[::1]` with the admin port — or a name the operator listed
// (`--admin-hosts`: `name` = that name without a port or with the admin port, `name:port` = exactly that). A web page whose
// own name was rebound to 127.0.0.1 sends its own name as Host and is refused (403).
// Origin (cross-site requests, WebSocket hijacking, the MCP spec's Origin rule): a request that
// carries an Origin must come from the admin port's own origin (`http(s)://<its Host>`); anything
// else, `null` included, is 403, on every route and method. A state-changing request without an
// Origin but with a `Sec-Fetch-Site` other than same-origin is 403 too.
// Token: with an admin token every route but `/health` (and the login form, which checks the token
// itself) needs it, as `Authorization: Bearer <token>` or the console's session cookie (set by
// POST /login, HttpOnly, SameSite=Strict, holding a digest of the token, never the token itself).
// Without a token the admin port is bound to loopback only (startAdminServer refuses otherwise).

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ErrorCode, RunnerError } from '../errors.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'tr_console';

/** A refusal: HTTP status, stable code, message naming the offending value. */
export interface Refusal {
  status: number;
  code: string;
  message: string;
}

export interface AccessGuard {
  /** Whether a token is configured. */
  readonly tokenRequired: boolean;
  /**
   * Checks a request to any route of the admin port; undefined when allowed. `mutating`: it changes
   * something or opens a stream; `token: false` skips the token (only `/health` and POST /login).
   */
  check(req: IncomingMessage, options: { mutating: boolean; token?: boolean }): Refusal | undefined;
  /** The port the admin server listens on (known once it listens; the Host check needs it). */
  setPort(port: number): void;
  /**
   * The exact Host values and Origins the guard lets through without a token (for the MCP SDK's own
   * DNS-rebinding check); undefined with a token (then any Host with the token passes).
   */
  exactAllowList(): { hosts: string[]; origins: string[] } | undefined;
  /** Whether `candidate` is the admin token (constant time). */
  tokenMatches(candidate: string): boolean;
  /** The Set-Cookie value of a fresh session. */
  sessionCookie(): string;
}

const digest = (value: string): Buffer => createHash('sha256').update(`tools-runner-console:${value}`).digest();

function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Host part of a Host header (`[::1]:8082` -> `::1`, `localhost:80` -> `localhost`). */
export function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  const colon = h.lastIndexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

/** Port part of a Host header (`[::1]:8082` -> `8082`); undefined when it names none. */
export function hostPort(header: string): string | undefined {
  const h = header.trim();
  const close = h.lastIndexOf(']');
  const colon = h.lastIndexOf(':');
  return colon > close ? h.slice(colon + 1) : undefined;
}

/** The names the admin port answers to without a token (with its own port). */
export const LOOPBACK_NAMES: readonly string[] = ['127.0.0.1', 'localhost', '::1'];

/** Validates `--admin-hosts` entries (`name` or `name:port`, no scheme or path); throws naming the bad one. */
export function validateAdminHosts(entries: readonly string[]): string[] {
  return entries.map((entry) => {
    const value = entry.trim().toLowerCase();
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(value)) {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `admin host ${JSON.stringify(entry)} is not "name" or "name:port" (no scheme, path or wildcard)`,
      );
    }
    return value;
  });
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Builds the guard for one admin port; `hosts` are the operator's extra names (`--admin-hosts`, validated). */
export function createAccessGuard(options: { token: string | undefined; hosts?: readonly string[] }): AccessGuard {
  const tokenDigest = options.token === undefined ? undefined : digest(options.token);
  const sessionValue = tokenDigest?.toString('base64url');
  const listed = options.hosts ?? [];
  let port: string | undefined;

  /** Whether a Host header names this admin port (see the module comment). */
  const hostAllowed = (header: string): boolean => {
    const name = hostName(header);
    const given = hostPort(header);
    if (LOOPBACK_NAMES.includes(name) && given !== undefined && given === port) return true;
    const exact = header.trim().toLowerCase();
    return listed.some((entry) =>
      hostPort(entry) === undefined
        ? hostName(entry) === name && (given === undefined || given === port)
        : entry === exact,
    );
  };

  const authorized = (req: IncomingMessage): Refusal | undefined => {
    if (tokenDigest === undefined) return undefined;
    const auth = req.headers.authorization;
    if (auth !== undefined) {
      const match = /^Bearer (.+)$/.exec(auth);
      if (!match)
        return {
          status: 401,
          code: 'unauthorized',
          message: 'malformed Authorization header; expected "Bearer <admin token>"',
        };
      if (sameDigest(digest(match[1] as string), tokenDigest)) return undefined;
      return { status: 401, code: 'unauthorized', message: 'the bearer token is not the admin token' };
    }
    const cookie = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (cookie !== undefined) {
      if (sameDigest(Buffer.from(cookie), Buffer.from(sessionValue as string))) return undefined;
      return {
        status: 401,
        code: 'unauthorized',
        message: 'the console session cookie is not valid (the admin token changed?); log in again',
      };
    }
    return {
      status: 401,
      code: 'unauthorized',
      message: 'the admin port requires the admin token (Authorization: Bearer <token>, or log in at /)',
    };
  };

  return {
    tokenRequired: tokenDigest !== undefined,
    check(req, { mutating, token = true }) {
      const host = req.headers.host;
      if (host === undefined || host === '')
        return { status: 400, code: 'host_missing', message: 'the request has no Host header' };
      if (tokenDigest === undefined && !hostAllowed(host)) {
        return {
          status: 403,
          code: 'host_not_allowed',
          message: `Host "${host.slice(0, 200)}" is not this admin port; without an admin token it answers only to 127.0.0.1, localhost and [::1] with its port ${port ?? '?'}${listed.length > 0 ? ` and to ${listed.join(', ')}` : ''} (--admin-hosts adds names)`,
        };
      }
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`) {
        return {
          status: 403,
          code: 'origin_not_allowed',
          message: `Origin "${origin.slice(0, 200)}" is not this admin port's origin (http://${host.slice(0, 200)}); cross-site requests are refused`,
        };
      }
      if (
        mutating &&
        origin === undefined &&
        req.headers['sec-fetch-site'] !== undefined &&
        req.headers['sec-fetch-site'] !== 'same-origin'
      ) {
        return {
          status: 403,
          code: 'origin_not_allowed',
          message: `Sec-Fetch-Site "${String(req.headers['sec-fetch-site'])}" is not same-origin; cross-site requests are refused`,
        };
      }
      return token ? authorized(req) : undefined;
    },
    setPort(value) {
      port = String(value);
    },
    exactAllowList() {
      if (tokenDigest !== undefined || port === undefined) return undefined;
      const hosts = [
        ...LOOPBACK_NAMES.map((name) => `${name.includes(':') ? `[${name}]` : name}:${port}`),
        ...listed.flatMap((entry) => (hostPort(entry) === undefined ? [entry, `${entry}:${port}`] : [entry])),
      ];
      return { hosts, origins: hosts.flatMap((host) => [`http://${host}`, `https://${host}`]) };
    },
    tokenMatches(candidate) {
      return tokenDigest !== undefined && sameDigest(digest(candidate), tokenDigest);
    },
    sessionCookie() {
      return `${SESSION_COOKIE}=${sessionValue ?? ''}; Path=/; HttpOnly; SameSite=Strict`;
    },
  };
}
