// Who may use the admin port's console, its API and `/live`.
//
// With an admin token: every console page, API call, `/live` and `/metrics` needs it, as
// `Authorization: Bearer <token>` or the console's session cookie (set by POST /login, HttpOnly,
// SameSite=Strict, holding a digest of the token, never the token itself).
// Without one the admin port is bound to loopback only (startAdminServer refuses otherwise), and
// what stops a web page from reaching it through the person's browser is checked here: the Host
// header must name a loopback address (DNS rebinding), and a request that changes something or
// opens the WebSocket must come from the console's own origin (cross-site requests, WebSocket
// hijacking). The origin check applies with a token too.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

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
  /** Checks a request for a console page, the API, `/live` or `/metrics`; undefined when allowed. */
  check(req: IncomingMessage, options: { mutating: boolean }): Refusal | undefined;
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

function loopbackName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost') || name === '::1' || /^127(\.\d{1,3}){3}$/.test(name);
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Builds the guard for one admin port. */
export function createAccessGuard(options: { token: string | undefined }): AccessGuard {
  const tokenDigest = options.token === undefined ? undefined : digest(options.token);
  const sessionValue = tokenDigest?.toString('base64url');

  const authorized = (req: IncomingMessage): Refusal | undefined => {
    if (tokenDigest === undefined) return undefined;
    const auth = req.headers.authorization;
    if (auth !== undefined) {
      const match = /^Bearer (.+)$/.exec(auth);
      if (!match) return { status: 401, code: 'unauthorized', message: 'malformed Authorization header; expected "Bearer <admin token>"' };
      if (sameDigest(digest(match[1] as string), tokenDigest)) return undefined;
      return { status: 401, code: 'unauthorized', message: 'the bearer token is not the admin token' };
    }
    const cookie = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (cookie !== undefined) {
      if (sameDigest(Buffer.from(cookie), Buffer.from(sessionValue as string))) return undefined;
      return { status: 401, code: 'unauthorized', message: 'the console session cookie is not valid (the admin token changed?); log in again' };
    }
    return { status: 401, code: 'unauthorized', message: 'the admin port requires the admin token (Authorization: Bearer <token>, or log in at /)' };
  };

  return {
    tokenRequired: tokenDigest !== undefined,
    check(req, { mutating }) {
      const host = req.headers.host;
      if (host === undefined || host === '') return { status: 400, code: 'host_missing', message: 'the request has no Host header' };
      if (tokenDigest === undefined && !loopbackName(hostName(host))) {
        return { status: 403, code: 'host_not_allowed', message: `Host "${host.slice(0, 200)}" is not a loopback name; without an admin token the console answers only to localhost, 127.0.0.1 and [::1]` };
      }
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`) {
        return { status: 403, code: 'origin_not_allowed', message: `Origin "${origin.slice(0, 200)}" is not this console (${host.slice(0, 200)}); cross-site requests are refused` };
      }
      if (mutating && origin === undefined && req.headers['sec-fetch-site'] !== undefined && req.headers['sec-fetch-site'] !== 'same-origin') {
        return { status: 403, code: 'origin_not_allowed', message: `Sec-Fetch-Site "${String(req.headers['sec-fetch-site'])}" is not same-origin; cross-site requests are refused` };
      }
      return authorized(req);
    },
    tokenMatches(candidate) {
      return tokenDigest !== undefined && sameDigest(digest(candidate), tokenDigest);
    },
    sessionCookie() {
      return `${SESSION_COOKIE}=${sessionValue ?? ''}; Path=/; HttpOnly; SameSite=Strict`;
    },
  };
}
