import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN } from '../contract/common.js';
import { refusalOf, ServiceError } from '../contract/problems.js';
import type { RouteSpec } from '../contract/routes.js';
import { faultError } from '../testing/fault-answer.js';
import { pointerRefusal } from '../testing/pointer.js';
import type { FaultDecision } from '../testing/faults.js';
import { readJsonBody, type JsonBody } from './body.js';
import { headersOf, problemOf, sendJson, sendProblem } from './respond.js';

/**
 * One route of the contract on node:http: what it answers once every check passed. It gets its path
 * parameters, query and body parsed by the contract's schemas, and answers a JSON body (sent with the
 * route's 2xx status), or writes the response itself (a file) and answers `WRITTEN`.
 */
export type Handler<C> = (input: { caller: C; params: any; query: any; body: any; req: IncomingMessage; res: ServerResponse }) => unknown;

/** What a handler answers when it wrote the response itself. */
export const WRITTEN = Symbol('written');

/** A stored first answer under an Idempotency-Key, and the key's state (spec 7). */
export type KeyStart =
  | { kind: 'fresh'; finish(response: { status: number; body: unknown } | null): void; share(response: { status: number; body: unknown } | null): Promise<void> }
  | { kind: 'replay'; response: { status: number; body: unknown } }
  | { kind: 'in_progress' }
  | { kind: 'reused' };

/** What the pipeline asks of the service. Each check throws a `ServiceError` to refuse. */
export interface PipelineDeps<C> {
  /** The service's origin: `user_action.url` of a 402. */
  origin(): string;
  /**
   * The bearer key of a keyed route and its 60 requests a minute (spec 4, 5.4, 8): the caller and the
   * rate-limit headers every answer to it carries, or a refusal (401, 429; 503 when Redis does not answer).
   */
  admit(req: IncomingMessage): Promise<{ caller: C; headers: Record<string, string>; refusal?: ServiceError }>;
  /**
   * The credential of a test helper (issue 22): the admin token (the caller is `null`: every account, no
   * rate window), or with `orKey` an API key, admitted as `admit` does (its window counts; no balance floor).
   * Anything else is a refusal (401; 429 for an address that failed too often).
   */
  admitAdmin(req: IncomingMessage, orKey: boolean): Promise<{ caller: C | null; headers: Record<string, string>; refusal?: ServiceError }>;
  /** Spec 4: below 10 credits every keyed endpoint answers 402 insufficient_credits. */
  floor(caller: C): void;
  /** Looks an Idempotency-Key up: its stored answer, its first request still running, another body, or fresh. */
  beginKey(caller: C, key: string, fingerprint: string): Promise<KeyStart>;
  /** The fingerprint of a request (method, path, canonical body). */
  fingerprint(method: string, path: string, body: unknown): string;
  /** Runs a command as one unit of work: saved whole, or taken back and thrown. */
  unit<R>(run: () => Promise<R>): Promise<R>;
  /** The answer to an error that is not a `ServiceError`: a failed write is 503, anything else 500. */
  failure(error: unknown): ServiceError;
  warn(message: string): void;
  /** The fault rule that acts on this request of a route, if any (issue 22), counting it. */
  fault?(route: RouteSpec, caller: C | null): FaultDecision | null;
  /** Called once a request of a route has been answered (or its connection ended): the request journal (issue 22). */
  record?(route: RouteSpec, req: IncomingMessage, res: ServerResponse, exchange: Exchange<C>, query: Record<string, string>): void;
}

/** What the pipeline learnt of one request, for the request journal (issue 22). */
export interface Exchange<C> {
  /** The admitted caller; `null` for a public route, the admin token, or a request refused before. */
  caller: C | null;
  /** The `Idempotency-Key` header as sent. */
  idempotencyKey: string | null;
  /** Answered from the stored answer of its Idempotency-Key. */
  replayed: boolean;
  /** The JSON body as sent (before the contract read it), when the route takes one and it was read. */
  body: unknown;
  /** The problem code of a refusal. */
  code: string | null;
  /** No answer was sent: a fault rule cut the connection or let it hang. */
  dropped: boolean;
  /** The admin token was admitted (issue 29 follow-up item 4: the journal keeps its requests apart). */
  admin: boolean;
}

/**
 * Answers one request of a contract route, with every check in one order (spec 4, 7 and issue 21):
 * the key (401; for a test helper the admin token, or an API key where the route takes one), 60 a minute (429), a stored answer of the Idempotency-Key (replayed whatever the balance),
 * the balance floor (402), then what the request says: the body's JSON (400, 413), the key's syntax (400)
 * and state (409, 422), the path (404), the query and the body by the contract (400, 422), and at last the
 * command, saved as one unit before the answer. The route's handler knows none of these.
 */
export async function runRoute<C>(route: RouteSpec, handler: Handler<C>, rawParams: Record<string, string>, query: Record<string, string>, req: IncomingMessage, res: ServerResponse, deps: PipelineDeps<C>): Promise<void> {
  const header = req.headers['idempotency-key'];
  const exchange: Exchange<C> = { caller: null, idempotencyKey: typeof header === 'string' ? header : null, replayed: false, body: undefined, code: null, dropped: false, admin: false };
  try {
    await answer(route, handler, rawParams, query, req, res, deps, exchange);
  } finally {
    deps.record?.(route, req, res, exchange, query);
  }
}

async function answer<C>(route: RouteSpec, handler: Handler<C>, rawParams: Record<string, string>, query: Record<string, string>, req: IncomingMessage, res: ServerResponse, deps: PipelineDeps<C>, exchange: Exchange<C>): Promise<void> {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  let headers: Record<string, string> = {};
  // A fault rule's `cut: after`: the request runs and takes effect, and its answer is never sent.
  let cutAfter = false;
  const drop = () => {
    exchange.dropped = true;
    if (!req.readableEnded) req.resume();
    res.destroy();
  };
  const refuse = (error: ServiceError) => {
    if (cutAfter) return drop();
    exchange.code = error.code;
    sendProblem(res, problemOf(error, { origin: deps.origin(), instance: path }), { ...headers, ...headersOf(error) });
  };
  let caller = null as C;
  let key: Extract<KeyStart, { kind: 'fresh' }> | null = null;
  try {
    if (route.auth === 'admin' || route.auth === 'admin_or_key') {
      const admitted = await deps.admitAdmin(req, route.auth === 'admin_or_key');
      caller = admitted.caller as C;
      headers = admitted.headers;
      exchange.caller = admitted.caller;
      if (admitted.refusal) throw admitted.refusal;
      exchange.admin = admitted.caller === null;
    } else if (route.auth !== 'none') {
      const admitted = await deps.admit(req);
      ({ caller, headers } = admitted);
      exchange.caller = caller;
      if (admitted.refusal) throw admitted.refusal;
    }
    // Issue 22: a fault rule acts after the credential and its rate window, before anything else is done.
    const fault = deps.fault?.(route, caller) ?? null;
    if (fault) {
      const { action } = fault;
      if (action.kind === 'problem') {
        const balance = (caller as { account?: { balance: number } } | null)?.account?.balance;
        throw faultError(action.code, { ruleId: fault.rule.id, instance: path, origin: deps.origin(), balance, itemCodes: fault.itemCodes, retryAfter: action.retryAfter });
      }
      if (action.kind === 'cut' && action.when === 'before') return drop();
      if (action.kind === 'hang') {
        exchange.dropped = true;
        req.resume();
        // Never answered: the request ends when the client gives up (or the server closes).
        return await new Promise<void>((resolve) => res.once('close', resolve));
      }
      if (action.kind === 'delay') await realDelay(action.ms, res);
      cutAfter = action.kind === 'cut';
    }
    let json: JsonBody | null = null;
    if (route.idempotent) {
      // The stored answer of a key is replayed before the floor (spec 7): it needs the body to compare.
      json = await readJsonBody(req);
      if (json.ok) exchange.body = json.value;
      const header = req.headers['idempotency-key'];
      const valid = typeof header === 'string' && IDEMPOTENCY_KEY_PATTERN.test(header);
      if (valid && json.ok) {
        const start = await deps.beginKey(caller, header, deps.fingerprint(req.method ?? 'POST', path, json.value));
        if (start.kind === 'replay') {
          exchange.replayed = true;
          if (cutAfter) return drop();
          return sendJson(res, start.response.status, start.response.body, { ...headers, 'idempotent-replayed': 'true' });
        }
        if (start.kind === 'fresh') key = start;
        else {
          if (route.auth === 'key') deps.floor(caller);
          throw start.kind === 'in_progress'
            ? new ServiceError('idempotency_in_progress', 'The first request with this Idempotency-Key is still running.', { retryAfter: 1 })
            : new ServiceError('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key.');
        }
      }
      if (route.auth === 'key') deps.floor(caller);
      if (!json.ok) throw json.error;
      if (header !== undefined && !valid) throw new ServiceError('invalid_idempotency_key', 'Idempotency-Key takes 1-255 printable ASCII characters (0x21-0x7E).');
    } else if (route.auth === 'key') deps.floor(caller);
    const params = route.params ? parse(route.params, rawParams, route, 'not_found') : {};
    const parsedQuery = route.query ? parse(route.query, query, route) : {};
    let body: unknown;
    if (route.body) {
      json ??= await readJsonBody(req);
      if (json.ok) exchange.body = json.value;
      if (!json.ok) throw json.error;
      // No body at all where every member is optional (POST /test_helpers/accounts) is the empty object.
      const value = json.value === undefined && route.body.safeParse({}).success ? {} : json.value;
      body = parse(route.body, value, route, 'invalid_json');
    } else if (!route.multipart && req.method !== 'GET' && req.method !== 'HEAD') req.resume();
    const outcome = await deps.unit(async () => {
      try {
        const value = await handler({ caller, params, query: parsedQuery, body, req, res });
        key?.finish(value === WRITTEN ? null : { status: successOf(route), body: value });
        return { value };
      } catch (error) {
        // A refusal whose command made something to keep (spec 5: 503 moderation_pending's assets) is
        // committed as it is; any other refusal takes back what its command changed.
        if (error instanceof ServiceError && error.keep) return { kept: error };
        throw error;
      }
    });
    if ('kept' in outcome) throw outcome.kept;
    const answer = outcome.value;
    if (key) {
      const stored = { status: successOf(route), body: answer };
      const shared = key;
      key = null;
      // Other processes on Redis learn the key once the task is durable here; if Redis fails now the task
      // stands (charged and saved), this process still replays it, and the key's lease holds it elsewhere.
      await shared.share(stored).catch((error: Error) => deps.warn(`could not record an Idempotency-Key in Redis: ${error.message}`));
    }
    if (cutAfter) return drop();
    if (answer !== WRITTEN && !res.headersSent) sendJson(res, successOf(route), answer, headers);
  } catch (error) {
    if (key) {
      key.finish(null);
      // A released key is released in Redis in the background: the refusal is the answer either way.
      key.share(null).catch((shareError: Error) => deps.warn(`could not release an Idempotency-Key in Redis: ${shareError.message}`));
    }
    if (!(error instanceof ServiceError)) {
      const failure = deps.failure(error);
      if (res.headersSent) return void res.destroy();
      return refuse(failure);
    }
    if (res.headersSent) return void res.destroy();
    if (!req.readableEnded) req.resume();
    refuse(error);
  }
}

/** Waits `ms` real milliseconds (a fault rule's `delay_ms`: what a client's time-out sees), or until the client has gone. */
function realDelay(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

/** The route's one 2xx status (202 for a new clip, 207 for a batch, 200 elsewhere). */
function successOf(route: RouteSpec): number {
  return Number(Object.keys(route.responses).find((status) => status.startsWith('2')) ?? 200);
}

/** Parses a part of the request with its schema, or throws the refusal the contract names for it. */
export function parse(schema: z.ZodType, value: unknown, route: RouteSpec, fallback: 'not_found' | 'invalid_json' | 'invalid_parameter' = 'invalid_parameter'): unknown {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const options = { fallback: fallback === 'invalid_json' ? 'invalid_parameter' : fallback, ...(route.indexed ? { indexed: route.indexed } : {}) } as const;
  // A body written as a file (issue 22's seed fixture) names the member at fault with a JSON Pointer.
  const refusal = route.pointer && fallback === 'invalid_json' ? pointerRefusal(schema, parsed.error.issues, value, options) : refusalOf(schema, parsed.error.issues, value, options);
  // A body that is not an object at all is malformed, not a bad member (spec 7: invalid_json).
  if (fallback === 'invalid_json' && parsed.error.issues[0]?.path.length === 0) throw new ServiceError('invalid_json', route.indexed ? `The body must be a JSON object with ${route.indexed}.` : 'The body must be a JSON object.');
  throw ServiceError.from(refusal);
}
