import type { IncomingMessage } from 'node:http';
import { fail, type Result } from '../http/result.js';
import { isLoopbackHost } from '../../http/loopback.js';

/**
 * The MCP transport's DNS rebinding rule for `/mcp` (issue 20 item 4): "servers MUST validate the Origin
 * header… if the Origin header is present and invalid, servers MUST respond with HTTP 403". A page on
 * `evil.example` that makes its name resolve to 127.0.0.1 still sends `Host: evil.example` and
 * `Origin: http://evil.example`, so both are checked, as the inspector checks `Host`.
 *
 * Valid: a loopback name (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`) and the host name of the
 * service's own origin (`--public-url` behind a proxy or Docker), on any port. No header is valid too (only a
 * browser sends `Origin`, and every browser sends `Host`). Anything else is 403 `host_not_allowed` or
 * `origin_not_allowed`, before the credential is looked at.
 */
export function checkOriginAndHost(req: IncomingMessage, origin: string): Result | null {
  const own = new URL(origin);
  const { host, origin: sentOrigin } = req.headers;
  if (host !== undefined && !isAllowed(`http://${host}`, own)) {
    return fail('host_not_allowed', { detail: `The assistant endpoint answers to ${own.hostname} or a loopback name, not to Host ${JSON.stringify(host)} (DNS rebinding protection).` });
  }
  if (sentOrigin !== undefined && !isAllowed(sentOrigin, own)) {
    return fail('origin_not_allowed', { detail: `The assistant endpoint takes requests from pages of ${own.hostname} or a loopback origin, not from ${JSON.stringify(sentOrigin)}.` });
  }
  return null;
}

/**
 * A host (as `http://<Host>`) or an origin that names this machine or the service's own host name. The
 * port is not compared: a rebinding page brings its own name, never ours.
 */
function isAllowed(text: string, own: URL): boolean {
  const url = URL.parse(text);
  // `Origin: null` (a sandboxed frame, a file) names no one, so it is not trusted.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
  return isLoopbackHost(url.hostname) || url.hostname === own.hostname;
}
