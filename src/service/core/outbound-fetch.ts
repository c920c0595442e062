import https from 'node:https';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import { classifyAddress } from '../../http/address.js';
import { guardLookup, type LookupFunction } from '../../http/outbound-guard.js';

/** How `guardedFetch` reaches the network. */
export interface GuardedFetchOptions {
  /**
   * Replaces the connection itself (tests use it to stay on this machine); the URL checks still run first.
   * @default https with the outbound connect-time address guard (the webhooks' too)
   */
  transport?: typeof fetch | undefined;
  /** The DNS lookup of every connection (tests answer names with it). @default dns.lookup */
  lookup?: LookupFunction | undefined;
}

/** An outbound request the service refuses to make: it never connected. */
export class OutboundRefusedError extends Error {
  readonly code = 'outbound_refused';
}

/**
 * A `fetch` for requests a stranger can make the service send: the authorization server's client ID
 * metadata documents (`client_id=https://…`, fetched before anyone signed in) and any `jwks_uri`.
 * https only, no credentials, and no private, loopback, link-local or metadata address:
 * a literal address (in any spelling: `127.1`, `0x7f000001`, `[::ffff:127.0.0.1]`, `0`…, which the URL
 * parser turns into the dotted form) and `localhost` are refused here, and a name is checked by the
 * outbound connect-time guard the webhooks use too (`guardLookup`, http/outbound-guard.ts), which refuses a private answer before the socket
 * opens. So nothing is connected to, and an open port answers exactly as a closed one: no port scanner.
 * Redirects are never followed (a 3xx is the answer).
 * @example const fetchDocument = guardedFetch(); await fetchDocument('https://assistant.example/client.json');
 */
export function guardedFetch({ transport, lookup }: GuardedFetchOptions = {}): typeof fetch {
  const guarded = guardLookup(lookup);
  return async function outboundFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const fault = publicHttpsFault(url);
    if (fault) throw new OutboundRefusedError(`Refused to fetch ${url.protocol}//${url.host}: ${fault}.`);
    if (transport) return transport(url, init);
    return request(url, init, guarded);
  } as typeof fetch;
}

/** Why a URL may not be fetched by a stranger's say-so, or null. */
export function publicHttpsFault(url: URL): string | null {
  if (url.protocol !== 'https:') return 'only https is fetched';
  if (url.username || url.password) return 'credentials in the URL are refused';
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  // RFC 6761: localhost and its subdomains are the loopback interface, whatever DNS says.
  if (host === 'localhost' || host.endsWith('.localhost')) return 'a loopback name';
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(bare) !== 0) {
    const cls = classifyAddress(bare);
    if (cls !== null) return `a ${cls} address`;
  }
  return null;
}

// Responses that have no body by definition (the Response constructor refuses one).
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function request(url: URL, init: RequestInit, lookup: LookupFunction): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = typeof init.body === 'string' || init.body instanceof Uint8Array ? init.body : init.body == null ? undefined : String(init.body);
    const outgoing = https.request(url, {
      method: init.method ?? 'GET',
      headers,
      // A fresh socket per request, so its address goes through the guarded lookup.
      agent: false,
      lookup,
      ...(init.signal ? { signal: init.signal } : {}),
    });
    outgoing.once('error', reject);
    outgoing.once('response', (res) => {
      const status = res.statusCode ?? 502;
      const answer = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        if (value === undefined) continue;
        for (const one of Array.isArray(value) ? value : [value]) answer.append(name, one);
      }
      if (NULL_BODY.has(status)) {
        res.resume();
        return resolve(new Response(null, { status, headers: answer }));
      }
      resolve(new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, { status, headers: answer }));
    });
    outgoing.end(body);
  });
}
