// The console's side of HTTP (the helpers themselves are src/http.ts): its security headers, JSON
// bodies with a checked Content-Type, the built browser files, and the login page shown when the
// admin token is required.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode, RunnerError } from '../errors.js';
import { HttpError, parseJsonObject, readBody } from '../http.js';

/** Headers every console reply carries (no framing, no sniffing, scripts only from here). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on the login form's POST,
  // which the guard refuses; same-origin sends the real Origin there and still no referrer elsewhere.
  'referrer-policy': 'same-origin',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
};

/** Headers of every console JSON reply: the security headers, never cached. */
export const JSON_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'cache-control': 'no-store' };

/** Reads a JSON object body of at most `maxBytes`; HttpError 415/413/400 (`bad_request`) otherwise. */
export async function readJsonObject(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    const got = JSON.stringify(req.headers['content-type'] ?? null);
    throw new HttpError(415, 'unsupported_media_type', `Content-Type must be application/json, got ${got}`);
  }
  return parseJsonObject(await readBody(req, res, maxBytes), { invalidJson: 'bad_request', notObject: 'bad_request' });
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** The built browser files, read once; only files that exist under `dir` are ever served. */
export interface Assets {
  /** Serves `path` (`/` = index.html); false when it is not a built file. */
  serve(res: ServerResponse, path: string, head: boolean): boolean;
  readonly built: boolean;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? listFiles(path) : entry.isFile() ? [path] : [];
  });
}

/** Loads the files of `dir` (dist/console/public) into memory. */
export function loadAssets(dir: string): Assets {
  const files = new Map<string, { body: Buffer; type: string; immutable: boolean }>();
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    for (const file of listFiles(dir)) {
      const url = '/' + relative(dir, file).split(sep).join('/');
      // Chunks carry a content hash in their name (esbuild `[name]-[hash]`): cache them forever.
      files.set(url, {
        body: readFileSync(file),
        type: TYPES[extname(file)] ?? 'application/octet-stream',
        immutable: url.startsWith('/assets/chunks/'),
      });
    }
  }
  return {
    built: files.has('/index.html'),
    serve(res, path, head) {
      const file = files.get(path === '/' ? '/index.html' : path);
      if (!file) return false;
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': file.type,
        'content-length': file.body.length,
        'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      });
      res.end(head ? undefined : file.body);
      return true;
    },
  };
}

/** The login form (self-contained: no script, no asset needs the token). */
export function loginPage(message: string | undefined): string {
  const note = message ? `<p class="err">${escapeHtml(message)}</p>` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tools-runner console: log in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px system-ui,sans-serif;background:#f6f7f9;display:grid;place-items:center;height:100vh;margin:0}
form{background:#fff;padding:24px 28px;border:1px solid #dde;border-radius:8px;min-width:320px}h1{font-size:18px;margin:0 0 12px}
input{width:100%;box-sizing:border-box;padding:8px;margin:8px 0 12px;font:inherit}button{padding:8px 14px;font:inherit}.err{color:#b00020}</style>
</head><body><form method="post" action="/login"><h1>tools-runner console</h1>${note}
<label for="token">Admin token</label><input id="token" name="token" type="password" autocomplete="current-password" autofocus required>
<button type="submit">Log in</button></form></body></html>`;
}

/** Escapes text for HTML. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The console's built files: `<repo>/dist/console/public` (this file is src/console or dist/console). */
export function defaultAssetsDir(): string {
  return join(fileURLToPath(new URL('../../', import.meta.url)), 'dist', 'console', 'public');
}

/** Refusal to start: the admin port would be open to the network without a token. */
export function nonLoopbackWithoutToken(host: string): RunnerError {
  return new RunnerError(
    ErrorCode.ConfigInvalid,
    `refusing to serve the admin port on non-loopback host "${host}" without adminToken (set --admin-token, or bind to 127.0.0.1)`,
  );
}
