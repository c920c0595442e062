import type { IncomingMessage } from 'node:http';
import type { ProblemCode } from '../protocol/problem.js';
import { parseUrl } from '../http/url.js';

/**
 * Who may use the inspector: a browser on this machine, at the address it is bound to. The server binds
 * 127.0.0.1 only; these checks cover what binding cannot.
 *
 * - DNS rebinding: a page on `evil.example` can make its own name resolve to 127.0.0.1 and then read our
 *   answers as same-origin. Its requests still carry `Host: evil.example:<port>`, so anything but a
 *   loopback name with our port is refused (as Vite, webpack-dev-server and Jupyter do).
 * - Cross-site writes: a page anywhere can POST a form to 127.0.0.1:<port> with the right Host. Writes
 *   must be `application/json` (which a form cannot send, and which a cross-origin fetch must preflight,
 *   a preflight we never grant) and, when the browser says where they come from, come from our origin.
 */

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/** The `Host` values the inspector on `port` answers: each loopback name with the port (without it too on port 80). */
export function allowedHosts(port: number): ReadonlySet<string> {
  const hosts = new Set(LOOPBACK_NAMES.map((name) => `${name}:${port}`));
  if (port === 80) for (const name of LOOPBACK_NAMES) hosts.add(name);
  return hosts;
}

/** Why a request is refused, or `null` when it may go on. */
export type Refusal = { code: ProblemCode; detail: string } | null;

/** Refuses a request whose `Host` is not a loopback name with the bound port. */
export function checkHost(req: IncomingMessage, hosts: ReadonlySet<string>): Refusal {
  const host = req.headers.host?.toLowerCase();
  if (host !== undefined && hosts.has(host)) return null;
  return { code: 'host_not_allowed', detail: `The inspector answers only to ${[...hosts][0]} (or localhost, [::1]) on its own port, not to Host ${JSON.stringify(req.headers.host ?? '')}.` };
}

/** Refuses a write (POST) that a page of another origin could have sent. */
export function checkWrite(req: IncomingMessage, hosts: ReadonlySet<string>): Refusal {
  const origin = req.headers.origin;
  if (origin !== undefined && !isInspectorOrigin(parseUrl(origin), hosts)) {
    return { code: 'origin_not_allowed', detail: `Writes come from the inspector's own page, not from ${origin}.` };
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { code: 'origin_not_allowed', detail: `Writes come from the inspector's own page (Sec-Fetch-Site: ${site}).` };
  }
  const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') return { code: 'unsupported_media_type', detail: 'Send the request body as application/json.' };
  return null;
}

/** An http: origin whose host is one the inspector answers at. */
function isInspectorOrigin(url: URL | null, hosts: ReadonlySet<string>): boolean {
  return url?.protocol === 'http:' && hosts.has(url.host);
}
