import type { z } from 'zod';
import type { Problem } from './common.js';
import { ROUTES, type OperationId, type Route, type RouteSpec } from './routes.js';
import { parseUrl } from '../../http/url.js';

// A client typed from the route table the OpenAPI document is made from, so a caller
// names an operation and never writes a path: `cliphook service …` uses it. No dependency: the types are
// the routes' own zod schemas (what a request takes as input, what a 2xx answers as output).

type RouteFor<Id extends OperationId> = Extract<Route, { operationId: Id }>;

/** The `{name}`s of a path template. */
type PathNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | PathNames<Rest> : never;

type ParamsOf<R> = R extends { path: infer P extends string } ? ([PathNames<P>] extends [never] ? unknown : { params: Record<PathNames<P>, string | number> }) : never;
// A query member is optional whatever its schema says: an absent one is its default (queryInteger's `fallback`).
type QueryOf<R> = R extends { query: infer Q extends z.ZodType } ? { query?: Partial<z.input<Q>> } : unknown;
type BodyOf<R> = R extends { body: infer B extends z.ZodType } ? { body: z.input<B> } : unknown;

/** What an operation takes: its path parameters, its query and its JSON body, each only where the route has one. */
export type CallInput<Id extends OperationId> = ParamsOf<RouteFor<Id>> & QueryOf<RouteFor<Id>> & BodyOf<RouteFor<Id>>;

type Success = 200 | 201 | 202;
/** What an operation's 2xx answers, by its route's response schema. */
export type CallSuccess<Id extends OperationId> = RouteFor<Id>['responses'] extends infer Responses
  ? { [Status in keyof Responses & Success]: Responses[Status] extends { schema: infer S extends z.ZodType } ? z.output<S> : unknown }[keyof Responses & Success]
  : never;

/** A problem body (spec 7) as it arrived: any member may be missing when the answer is not the service's. */
export type ProblemAnswer = Partial<z.output<typeof Problem>> & Record<string, unknown>;

/** An answer: the 2xx body typed by the route (`null` when it is not JSON), or the problem. */
export type CallAnswer<Id extends OperationId> =
  | { ok: true; status: number; body: CallSuccess<Id> | null }
  | { ok: false; status: number; statusText: string; problem: ProblemAnswer | null };

/** Nothing answered: the fetch itself failed (no server, a refused connection, a reset); `cause` is fetch's error. */
export class ServiceUnreachableError extends Error {
  readonly code = 'service_unreachable';
  constructor(readonly origin: string, options: { cause: unknown }) {
    super(`cannot reach the service at ${origin}`, options);
    this.name = 'ServiceUnreachableError';
  }
}

export interface ContractClientOptions {
  /** The service's origin, without `/v1`: `http://127.0.0.1:8080`. */
  origin: string;
  /**
   * The bearer credential of a call, asked once per call with its route (whose `auth` says which one it
   * takes: an API key, or the admin token); routes whose `auth` is `none` send none. @default no credential
   */
  token?: (route: RouteSpec) => string | Promise<string>;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

export interface ContractClient {
  /**
   * Calls an operation of the contract by its operationId.
   * @example await client.call('rotateSecret', { params: { id: 'key_1' } })
   */
  call<Id extends OperationId>(operationId: Id, ...input: {} extends CallInput<Id> ? [input?: CallInput<Id>] : [input: CallInput<Id>]): Promise<CallAnswer<Id>>;
}

/** The path of `route` with its `{name}`s filled, each encoded as one segment. */
function pathOf(route: RouteSpec, params: Record<string, string | number> = {}): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (!Object.hasOwn(params, name)) throw new TypeError(`${route.operationId} needs the path parameter \`${name}\`.`);
    return encodeURIComponent(String(params[name]));
  });
}

/**
 * A client of the service typed from `ROUTES`: `call(operationId, { params, query, body })`.
 * @example contractClient({ origin: 'http://127.0.0.1:8080', token: () => apiKey }).call('topUp', { body: { credits: 100 } })
 */
export function contractClient({ origin, token, fetch: send = globalThis.fetch }: ContractClientOptions): ContractClient {
  if (typeof origin !== 'string' || !parseUrl(origin)) throw new TypeError(`Expected \`origin\` to be an absolute URL, got ${JSON.stringify(origin)}.`);
  if (token !== undefined && typeof token !== 'function') throw new TypeError('Expected `token` to be a function of the route.');
  const base = origin.replace(/\/+$/, '');
  // Loosely typed inside: the signature of ContractClient['call'] is what callers see.
  async function call(operationId: string, input?: { params?: Record<string, string | number>; query?: Record<string, unknown>; body?: unknown }) {
    const route = (ROUTES as readonly RouteSpec[]).find((each) => each.operationId === operationId);
    if (!route) throw new TypeError(`No operation ${JSON.stringify(operationId)} in the contract.`);
    const { params, query, body } = input ?? {};
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(name, String(value));
    const url = `${base}${pathOf(route, params)}${search.size > 0 ? `?${search}` : ''}`;
    const headers: Record<string, string> = {};
    if (route.auth !== 'none' && token) headers.authorization = `Bearer ${await token(route)}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await send(url, { method: route.method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch (error) {
      throw new ServiceUnreachableError(base, { cause: error });
    }
    const answer = (await res.json().catch(() => null)) as unknown;
    if (res.ok) return { ok: true, status: res.status, body: answer };
    return { ok: false, status: res.status, statusText: res.statusText, problem: typeof answer === 'object' && answer !== null ? (answer as ProblemAnswer) : null };
  }
  return { call: call as ContractClient['call'] };
}
