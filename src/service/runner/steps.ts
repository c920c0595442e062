import type { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN } from '../contract/common.js';
import { refusalOf, ServiceError } from '../contract/problems.js';
import type { RouteSpec } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import { pointerRefusal } from '../testing/pointer.js';
import type { GateRun } from './admit.js';
import { named, successOf, WRITTEN, type KeyLease, type Step } from './chain.js';

// Issue 31 item 1: the steps between the gate and the answer: the Idempotency-Key, the contract's parse,
// the unit of work and the command.

/** What the idempotency step asks of the records (core/idempotency.ts, on Redis too). */
export interface KeyRecords {
  /** Looks a key up: its stored answer, its first request still running, another body, or fresh (503 when Redis does not answer). */
  begin(caller: Caller, key: string, fingerprint: string): Promise<({ kind: 'fresh' } & KeyLease) | { kind: 'replay'; response: { status: number; body: unknown } } | { kind: 'in_progress' } | { kind: 'reused' }>;
  fingerprint(method: string, path: string, body: unknown): string;
  warn(message: string): void;
}

/**
 * Spec 7's Idempotency-Key, on the routes that take one: a stored answer is replayed (whatever the balance);
 * a key still running (409), used for another body (422), malformed (400), or a body that is not JSON
 * answer only after the floor. A fresh key is held until the commit, then shared; a refusal releases it.
 */
export function idempotency(records: KeyRecords): Step<GateRun> {
  return named('idempotency', async (run, next) => {
    if (!run.route.idempotent) return next();
    const { request, exchange } = run;
    const json = await request.json();
    if (json.ok) exchange.body = json.value;
    const header = request.idempotencyKey;
    const valid = typeof header === 'string' && IDEMPOTENCY_KEY_PATTERN.test(header);
    if (valid && json.ok) {
      const start = await records.begin(run.caller, header, records.fingerprint(request.method, request.path, json.value));
      if (start.kind === 'replay') {
        exchange.replayed = true;
        run.outcome = { kind: 'json', status: start.response.status, body: start.response.body, headers: { ...run.headers, 'idempotent-replayed': 'true' } };
        return;
      }
      if (start.kind === 'fresh') run.lease = start;
      else {
        run.pending = start.kind === 'in_progress'
          ? new ServiceError('idempotency_in_progress', 'The first request with this Idempotency-Key is still running.', { retryAfter: 1 })
          : new ServiceError('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key.');
      }
    }
    if (!run.pending && !json.ok) run.pending = json.error;
    if (!run.pending && header !== undefined && !valid) run.pending = new ServiceError('invalid_idempotency_key', 'Idempotency-Key takes 1-255 printable ASCII characters (0x21-0x7E).');
    const lease = run.lease;
    if (!lease) return next();
    try {
      await next();
    } catch (error) {
      lease.finish(null);
      // A released key is released in Redis in the background: the refusal is the answer either way.
      lease.share(null).catch((shareError: Error) => records.warn(`could not release an Idempotency-Key in Redis: ${shareError.message}`));
      throw error;
    }
    // Other processes on Redis learn the key once the task is durable here; if Redis fails now the task
    // stands (charged and saved), this process still replays it, and the key's lease holds it elsewhere.
    await lease.share({ status: successOf(run.route), body: run.value }).catch((error: Error) => records.warn(`could not record an Idempotency-Key in Redis: ${error.message}`));
  });
}

/** The path, query and body by the contract's schemas (404 for a path, 400 and 422 by the contract's codes). */
export function parseInput(): Step<GateRun> {
  return named('parse', async (run, next) => {
    if (run.pending) throw run.pending;
    const { route, request, exchange } = run;
    const params = route.params ? parse(route.params, request.params, route, 'not_found') : {};
    const query = route.query ? parse(route.query, request.query, route) : {};
    let body: unknown;
    if (route.body) {
      const json = await request.json();
      if (json.ok) exchange.body = json.value;
      if (!json.ok) throw json.error;
      // No body at all where every member is optional (POST /test_helpers/accounts) is the empty object.
      const value = json.value === undefined && route.body.safeParse({}).success ? {} : json.value;
      body = parse(route.body, value, route, 'invalid_json');
    } else if (!route.multipart && request.method !== 'GET' && request.method !== 'HEAD') request.discard();
    run.input = { params, query, body };
    return next();
  });
}

/**
 * The command as one unit of work: saved whole with its Idempotency-Key, or taken back and thrown. A
 * refusal whose command made something to keep (spec 5: 503 moderation_pending's assets) is committed.
 */
export function unitOfWork(store: { unit<R>(run: () => Promise<R>): Promise<R> }): Step<GateRun> {
  return named('unit', async (run, next) => {
    const kept = await store.unit(async () => {
      try {
        await next();
        run.lease?.finish(run.value === WRITTEN ? null : { status: successOf(run.route), body: run.value });
        return null;
      } catch (error) {
        if (error instanceof ServiceError && error.keep) return error;
        throw error;
      }
    });
    if (kept) throw kept;
  });
}

/** The operation's command, on the input the contract parsed. */
export const command: Step<GateRun> = named('command', async (run, next) => {
  run.value = await run.command({ caller: run.caller, ...run.input });
  return next();
});

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
