import type { IncomingMessage } from 'node:http';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { isLoopbackHost } from '../../http/loopback.js';
import { LIMITS } from '../contract/limits.js';
import { ServiceError } from '../contract/problems.js';
import type { Caller, Identified } from '../core/gate.js';
import { named, type Step } from '../runner/chain.js';
import { floor, limits } from '../runner/steps.js';
import type { AssistantConnections } from './connections.js';
import type { SignInParts } from './parts.js';

// Issue 31 item 1: a request to /mcp is let in by steps of the runner, in order: the DNS rebinding rule, who
// the bearer credential names (an API key through the gate of /v1, or an OAuth access token), the body, then
// /v1's own `limits` (60 a minute, 429) and `floor` (402) steps for every message but those that cost nothing.

/** The largest JSON-RPC body the endpoint reads (LIMITS.jsonBodyBytes, as /v1). */
export const MAX_MCP_BYTES = LIMITS.jsonBodyBytes;

/** A request to `/mcp` as the admission steps see it. */
export interface McpRun {
  readonly req: IncomingMessage;
  /** The service's origin (the DNS rebinding rule names its host). */
  readonly origin: string;
  /** Every message is a keyed call (the floor's rule). */
  readonly route: { readonly auth: 'key' };
  /** Who the credential names, until the limits admit it. */
  who?: Identified | undefined;
  caller: Caller;
  /** The rate window's headers, which every answer carries once the limits ran. */
  headers: Record<string, string>;
  readonly exchange: { caller: Caller | null };
  /** The body of a POST, read whole. */
  body: Buffer | undefined;
  /** Whether the message counts against the 60 a minute and meets the floor (issue 20 item 12). */
  counted: boolean;
}

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
export const originRule: Step<McpRun> = named('origin', (run, next) => {
  const own = new URL(run.origin);
  const { host, origin: sentOrigin } = run.req.headers;
  if (host !== undefined && !isAllowed(`http://${host}`, own)) {
    throw new ServiceError('host_not_allowed', `The assistant endpoint answers to ${own.hostname} or a loopback name, not to Host ${JSON.stringify(host)} (DNS rebinding protection).`);
  }
  if (sentOrigin !== undefined && !isAllowed(sentOrigin, own)) {
    throw new ServiceError('origin_not_allowed', `The assistant endpoint takes requests from pages of ${own.hostname} or a loopback origin, not from ${JSON.stringify(sentOrigin)}.`);
  }
  return next();
});

/**
 * A host (as `http://<Host>`) or an origin that names this machine or the service's own host name. The
 * port is not compared: a rebinding page brings its own name, never ours.
 */
function isAllowed(text: string, own: URL): boolean {
  const url = URL.parse(text);
  // `Origin: null` (a sandboxed frame, a file) names no one, so it is not trusted.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
  return url.hostname === own.hostname || isLoopbackHost(url.hostname);
}

/** What the sign-in step asks: the gate of `/v1`, the connections, and the OAuth side (sign-in.ts). */
export interface SignInStepParts {
  gate: SignInParts['gate'];
  connections: Pick<AssistantConnections, 'forKey'>;
  /** Who an OAuth access token names (a bearer token that is no API key); counts a guess when it is neither. */
  byToken(authorization: string | undefined, address: string | undefined): Promise<Identified>;
}

/**
 * Who the bearer credential names (spec 5.7; 401): an API key, looked up by `/v1`'s gate (issue 31 item 1), with
 * its assistant connection (a key disconnected from the assistant endpoint still works on `/v1` only), or an
 * OAuth access token the account holder approved.
 */
export function signIn(parts: SignInStepParts): Step<McpRun> {
  return named('identify', async (run, next) => {
    const { authorization } = run.req.headers;
    const byKey = parts.gate.lookup(authorization);
    if (byKey === 'invalid_auth_header') throw new ServiceError('invalid_auth_header', 'Send Authorization: Bearer <API key or OAuth access token>.');
    let who: Identified;
    if (byKey === 'invalid_api_key') who = await parts.byToken(authorization, run.req.socket.remoteAddress);
    else {
      const assistant = parts.connections.forKey(byKey.key);
      if (assistant.disconnectedAt !== null) throw new ServiceError('invalid_api_key', 'This API key was disconnected from the assistant endpoint in the account settings; it still works on /v1. Create another key to connect again.');
      who = { ...byKey, assistant };
    }
    const { limitName: _limitName, ...caller } = who;
    run.who = who;
    run.caller = caller;
    return next();
  });
}

/** The body of a POST, read whole within MAX_MCP_BYTES (413 body_too_large); whether its message counts. */
export const body: Step<McpRun> = named('body', async (run, next) => {
  const { req } = run;
  if (req.method === 'POST') {
    try {
      const read = readBody(req, MAX_MCP_BYTES, Number(req.headers['content-length'] ?? Number.NaN));
      run.body = Buffer.isBuffer(read) ? read : await read;
    } catch (error) {
      if (error instanceof BodyReadError && error.reason === 'too_large') throw new ServiceError('body_too_large', `The body is larger than ${MAX_MCP_BYTES} bytes.`);
      throw new ServiceError('invalid_json', 'The body could not be read.');
    }
  } else {
    req.resume();
  }
  run.counted = !uncounted(req.method, run.body);
  return next();
});

/** A step of `/v1` that runs only for a message that counts. */
const whenCounted = (step: Step<McpRun>): Step<McpRun> => named(step.stepName ?? 'counted', (run, next) => (run.counted ? step(run, next) : next()));

/** `/v1`'s 60 a minute per key (429 with the window's headers), for the messages that count. */
export const mcpLimits = (gate: Parameters<typeof limits>[0]): Step<McpRun> => whenCounted(limits<McpRun>(gate));

/** `/v1`'s balance floor (402), for the messages that count. */
export const mcpFloor = (gate: Parameters<typeof floor>[0]): Step<McpRun> => whenCounted(floor<McpRun>(gate));

/**
 * The requests that do not count against the 60 a minute (issue 20 item 12): GET and DELETE, which a
 * stateless server answers 405 whatever they carry, and `notifications/initialized`, which every
 * 2025-era client sends after `initialize` and which does nothing here. Anything else counts, a batch
 * included.
 */
function uncounted(method: string | undefined, body: Buffer | undefined): boolean {
  if (method === 'GET' || method === 'DELETE') return true;
  if (method !== 'POST' || !body || body.length > 256) return false;
  try {
    const message = JSON.parse(body.toString('utf8')) as { jsonrpc?: unknown; method?: unknown; id?: unknown };
    return message?.jsonrpc === '2.0' && message.method === 'notifications/initialized' && !('id' in message);
  } catch {
    return false;
  }
}
