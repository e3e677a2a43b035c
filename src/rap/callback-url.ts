// Validation of an invocation's `callback_url` (RAP tool server side).
//
// SSRF: the tool server POSTs results to whatever URL an invoker names, from inside the operator's
// network. So only http(s) URLs without credentials are accepted, and only to loopback addresses or
// to hosts the operator lists in `--rap-callback-hosts` (`name` or `name:port`). Redirects of the
// callback POST are never followed (a redirect could leave the allowed hosts). A listed host name is
// trusted as resolved by DNS; list names you control.

import { HttpError, isLoopbackHost } from '../http.js';
import { quoteValue } from './toolset.js';

/** Longest callback URL accepted. */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/** The checked callback URL, or a HttpError (400 malformed, 403 host not allowed). */
export function checkCallbackUrl(raw: unknown, allowedHosts: readonly string[]): URL {
  if (typeof raw !== 'string' || raw === '')
    throw new HttpError(400, 'input.invalid', `callback_url must be a non-empty string, got ${quoteValue(raw)}`);
  if (raw.length > MAX_CALLBACK_URL_LENGTH)
    throw new HttpError(
      400,
      'input.invalid',
      `callback_url is ${raw.length} characters long; at most ${MAX_CALLBACK_URL_LENGTH} are allowed`,
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HttpError(400, 'input.invalid', `callback_url is not an absolute URL: ${quoteValue(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new HttpError(
      400,
      'input.invalid',
      `callback_url must use http or https, got ${quoteValue(url.protocol.replace(/:$/, ''))}`,
    );
  }
  if (url.username !== '' || url.password !== '')
    throw new HttpError(400, 'input.invalid', 'callback_url must not contain credentials');
  const host = url.hostname.toLowerCase();
  const withPort = `${host}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
  const allowed =
    isLoopbackHost(host) ||
    allowedHosts.some((entry) => {
      const e = entry.trim().toLowerCase();
      return e === host || e === withPort || e === url.host.toLowerCase();
    });
  if (!allowed) {
    throw new HttpError(
      403,
      'permission.denied',
      `callback_url host ${quoteValue(url.hostname)} is not allowed: only loopback addresses and the hosts of --rap-callback-hosts may receive results`,
    );
  }
  return url;
}
