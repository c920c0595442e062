import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServiceApp } from '../../src/service/http/app.js';
import type { Caller } from '../../src/service/core/gate.js';
import type { Service } from '../../src/service/service.js';

/** An answer as a test reads it: the status, the parsed JSON body (or the text), lower-case headers. */
export interface Answer {
  status: number;
  body: any;
  headers: Record<string, string>;
}

export interface CallOptions {
  /** The API key sent as `Authorization: Bearer`; the service's first key unless given, none when `null`. */
  key?: string | null;
  /** Sent as JSON unless a string. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ServiceClient {
  /** The server's origin, `http://127.0.0.1:<port>` (the service's own `origin` is left as it was). */
  origin: string;
  call(method: string, path: string, options?: CallOptions): Promise<Answer>;
  get(path: string, options?: CallOptions): Promise<Answer>;
  post(path: string, body?: unknown, options?: CallOptions): Promise<Answer>;
  delete(path: string, options?: CallOptions): Promise<Answer>;
  close(): Promise<void>;
}

/**
 * Serves an open `Service` on 127.0.0.1 and a free port through the real app (contract, pipeline, answers),
 * so a test of a resource's behaviour goes through what a client sees. Paths without a leading `/v1`,
 * `/settings`, `/test_helpers` or `/mcp` get `/v1` in front. Closing stops the server only; the test
 * closes its service.
 */
export async function serviceClient(service: Service): Promise<ServiceClient> {
  const app = await createServiceApp({ service, warn: () => undefined });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = async (method: string, path: string, { key, body, headers = {} }: CallOptions = {}): Promise<Answer> => {
    const full = /^\/(v1|settings|test_helpers|mcp|oauth|\.well-known)(\/|$|\?)/.test(path) ? path : `/v1${path}`;
    const bearer = key === undefined ? service.first().apiKey : key;
    const response = await fetch(`${origin}${full}`, {
      method,
      headers: {
        ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }),
        ...(body === undefined || typeof body === 'string' ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // Not JSON: the text as it came.
    }
    return { status: response.status, body: parsed, headers: Object.fromEntries(response.headers) };
  };
  return {
    origin,
    call,
    get: (path, options) => call('GET', path, options),
    post: (path, body, options) => call('POST', path, { ...options, body }),
    delete: (path, options) => call('DELETE', path, options),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.assistant?.close();
    },
  };
}

/** The caller an API key names (the service's first key unless given), as the commands take it. */
export function callerOf(service: Service, key: string = service.first().apiKey): Caller {
  const { account, key: apiKey } = service.gate.identify(`Bearer ${key}`);
  return { account, key: apiKey };
}
