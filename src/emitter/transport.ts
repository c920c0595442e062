import http from 'node:http';
import https from 'node:https';
import { measured } from './measure.js';
import { checkHost, guardLookup, type LookupFunction } from '../http/outbound-guard.js';

/** One POST, as the attempt hands it to a transport. */
export interface TransportRequest {
  url: URL;
  headers: Record<string, string>;
  body: Buffer;
  /** Aborted when the attempt times out or the emitter stops. */
  signal: AbortSignal;
}

/** What came back: the status and at most the first `RESPONSE_KEEP_BYTES` of the body. */
export interface TransportReply {
  status: number;
  body: Buffer;
}

/**
 * Sends one request. Resolves as soon as a status came back (a failure while reading the body after
 * that is not an error: the status decides); rejects only when no status came back.
 */
export type Transport = (request: TransportRequest) => Promise<TransportReply>;

/** Bytes of the response body kept on the attempt record. */
export const RESPONSE_KEEP_BYTES = 1024;
/** Bytes read before the connection is dropped; reading to the end of a small body keeps the socket reusable. */
export const RESPONSE_READ_LIMIT = 64 * 1024;

export interface HttpTransportOptions {
  allowPrivateNetworks: boolean;
  /** Sockets per origin. */
  maxSockets: number;
  /** The DNS lookup the connect-time check wraps. @default dns.lookup */
  lookup?: LookupFunction;
}

/**
 * The default transport: `node:http`/`node:https` with keep-alive agents whose `lookup` refuses private
 * addresses at connect time. Redirects are never followed (node's client does not follow them).
 */
export function createHttpTransport({ allowPrivateNetworks, maxSockets, lookup }: HttpTransportOptions): Transport & { close(): void } {
  const agentOptions: http.AgentOptions = { keepAlive: true, maxSockets, scheduling: 'lifo' };
  if (!allowPrivateNetworks) agentOptions.lookup = guardLookup(lookup);
  else if (lookup) agentOptions.lookup = lookup;
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

  const send = function httpTransport({ url, headers, body, signal }: TransportRequest): Promise<TransportReply> {
    return new Promise((resolve, reject) => {
      // A literal address never goes through `lookup`, so it is checked here as well.
      if (!allowPrivateNetworks) checkHost(url.hostname);
      const secure = url.protocol === 'https:';
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.byteLength) },
        agent: secure ? agents.https : agents.http,
        signal,
      });
      request.once('error', reject);
      request.once('response', (response) => {
        const status = response.statusCode ?? 0;
        if (!measured.replyBody) {
          response.resume();
          return resolve({ status, body: Buffer.alloc(0) });
        }
        const kept: Buffer[] = [];
        let keptBytes = 0;
        let readBytes = 0;
        const done = (): void => resolve({ status, body: Buffer.concat(kept, keptBytes) });
        response.on('data', (chunk: Buffer) => {
          readBytes += chunk.byteLength;
          if (keptBytes < RESPONSE_KEEP_BYTES) {
            const part = chunk.subarray(0, RESPONSE_KEEP_BYTES - keptBytes);
            kept.push(part);
            keptBytes += part.byteLength;
          }
          if (readBytes > RESPONSE_READ_LIMIT) {
            response.destroy();
            done();
          }
        });
        response.once('end', done);
        response.once('error', done);
        response.once('close', done); // cut short (timeout, reset): the status is in, the body is what came
      });
      request.end(body);
    });
  };
  return Object.assign(send, {
    close(): void {
      agents.http.destroy();
      agents.https.destroy();
    },
  });
}

/** The subset of the Fetch API a fetch transport needs. */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>;

/**
 * A transport over an injected `fetch`. The URL checks still run, but the address a custom `fetch`
 * connects to is its own business: keep the default transport where the connect-time check matters.
 */
export function createFetchTransport(fetchFn: FetchFunction): Transport {
  return async function fetchTransport({ url, headers, body, signal }) {
    const response = await fetchFn(url.href, { method: 'POST', headers, body: body as Uint8Array<ArrayBuffer>, signal, redirect: 'manual' });
    const kept: Uint8Array[] = [];
    let keptBytes = 0;
    let readBytes = 0;
    const reader = response.body?.getReader();
    try {
      while (reader && readBytes <= RESPONSE_READ_LIMIT) {
        const { done, value } = await reader.read();
        if (done) break;
        readBytes += value.byteLength;
        if (keptBytes < RESPONSE_KEEP_BYTES) {
          const part = value.subarray(0, RESPONSE_KEEP_BYTES - keptBytes);
          kept.push(part);
          keptBytes += part.byteLength;
        }
      }
      await reader?.cancel().catch(() => undefined);
    } catch {
      // The status is in; a body cut short does not change what it says.
    }
    return { status: response.status, body: Buffer.concat(kept, keptBytes) };
  };
}
