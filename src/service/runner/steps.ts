import type { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN } from '../contract/common.js';
import { LIMITS } from '../contract/limits.js';
import { refusalOf, ServiceError } from '../contract/problems.js';
import { bodyOptional, type RouteSpec } from '../contract/routes.js';
import { rateLimitHeaders, type Admitted, type Caller, type Gate, type Identified } from '../core/gate.js';
import { fingerprint, type Idempotency } from '../core/idempotency.js';
import { tokenHash } from '../core/redis/client.js';
import { headersOf, problemOf } from '../http/respond.js';
import { pointerRefusal } from '../contract/pointer.js';
import { named, successOf, WRITTEN, type JsonBody, type KeyLease, type Outcome, type Run, type Step } from './chain.js';
import { failureOf } from './failure.js';
import type { Site } from '../core/site.js';

// The runner's steps, each a small function of the run and the rest of the chain, in the
// order a route runs them: answer, identify, limits, idempotency, floor, parse, unit, command (the test
// controls' journal and faults plug in from testing/steps.ts). One module, so one request loads few files.

/** A run of the service's routes, with who its credential named until the limits admit it. */
export type GateRun = Run<Caller> & {
  who?: Identified;
  /** The JSON body once read (by the idempotency step or the parse step). */
  json?: JsonBody;
};

/**
 * Who the credential names (spec 5.4; 401): the bearer key of a keyed route, and for a test helper the
 * admin token (no caller: every account, no rate window) or, where the route takes one, an API key.
 */
export function identify(gate: Pick<Gate, 'identify' | 'identifyAdmin'>): Step<GateRun> {
  return named('identify', (run, next) => {
    const { auth } = run.route;
    const { authorization, address } = run.request;
    if (auth === 'admin' || auth === 'admin_or_key') {
      const credential = gate.identifyAdmin(authorization, address, { orKey: auth === 'admin_or_key' });
      if (credential.admin) run.exchange.admin = true;
      else run.who = credential.who;
    } else if (auth !== 'none') run.who = gate.identify(authorization, address);
    return next();
  });
}

/** What the limits step reads and writes of a run: a route's, or a request to the assistant endpoint. */
export interface LimitsRun {
  who?: Identified | undefined;
  caller: Caller;
  headers: Record<string, string>;
  readonly exchange: { caller: Caller | null };
}

/** 60 requests a minute per key (spec 4, 8): every answer carries the window's headers; a full window is 429. */
export function limits<R extends LimitsRun = GateRun>(gate: Pick<Gate, 'admit'>): Step<R> {
  const admit = (run: R, { caller, decision }: Admitted, next: () => Promise<void>): Promise<void> => {
    run.caller = caller;
    run.exchange.caller = caller;
    run.headers = rateLimitHeaders(decision);
    if (!decision.allowed) throw new ServiceError('rate_limit_exceeded', `At most ${decision.limit} requests a minute per API key.`, { retryAfter: decision.retryAfter });
    return next();
  };
  // Plain (no promise of its own) with the limiter in memory; on Redis it waits for the count.
  return named<R>('limits', (run, next) => {
    if (!run.who) return next();
    const admitted = gate.admit(run.who);
    return admitted instanceof Promise ? admitted.then((answer) => admit(run, answer, next)) : admit(run, admitted, next);
  });
}

/** Spec 4: below 10 credits every keyed route answers 402 insufficient_credits (the test helpers stay open). */
export function floor<R extends { readonly route: { readonly auth: string }; caller: Caller } = GateRun>(gate: Pick<Gate, 'floor'>): Step<R> {
  return named<R>('floor', (run, next) => {
    if (run.route.auth === 'key') gate.floor(run.caller.account);
    return next();
  });
}

/** What the answer step needs: the origin (a 402's top-up link), and where failures are told. */
export interface AnswerParts {
  site: Site;
  warn(message: string): void;
  report(error: Error): void;
}

/**
 * The answer of a run (the one error → problem mapping): the command's value with the
 * route's 2xx status, an early step's outcome (a replay, a fault), or the problem of what was thrown. A
 * fault rule's `cut: after` sends none of them.
 */
export function answer(parts: AnswerParts): Step<GateRun> {
  return named('answer', async (run, next) => {
    const { request, exchange } = run;
    let outcome: Outcome;
    try {
      await next();
      if (run.outcome) outcome = run.outcome;
      else if (run.value === WRITTEN || request.answered()) outcome = { kind: 'written' };
      else outcome = { kind: 'json', status: successOf(run.route), body: run.value, headers: run.headers };
    } catch (error) {
      const refusal = failureOf(error, parts);
      outcome = request.answered()
        ? { kind: 'abort' }
        : { kind: 'problem', body: problemOf(refusal, { origin: parts.site.origin, instance: request.path }), headers: { ...run.headers, ...headersOf(refusal) }, error: refusal };
    }
    if (run.cutAfter && outcome.kind !== 'abort') outcome = { kind: 'drop' };
    if (outcome.kind === 'problem') exchange.code = outcome.body.code;
    if (outcome.kind === 'drop' || outcome.kind === 'hang') exchange.dropped = true;
    const sent = run.respond(outcome);
    if (sent) await sent;
  });
}

/** What the records found of a key. */
export type KeyStart = ({ kind: 'fresh' } & KeyLease) | { kind: 'replay'; response: { status: number; body: unknown } } | { kind: 'in_progress' } | { kind: 'reused' };

/** What the idempotency step asks of the records (core/idempotency.ts, on Redis too). */
export interface KeyRecords {
  /** Looks a key up: its stored answer, its first request still running, another body, or fresh (503 when Redis does not answer). */
  begin(caller: Caller, key: string, fingerprint: string): KeyStart | Promise<KeyStart>;
  fingerprint(method: string, path: string, body: unknown): string;
  warn(message: string): void;
}

/**
 * Spec 7's Idempotency-Key, on the routes that take one: a stored answer is replayed (whatever the balance);
 * a key still running (409), used for another body (422), malformed (400), or a body that is not JSON
 * answer only after the floor. A fresh key is held until the commit, then shared; a refusal releases it.
 */
export function idempotency(records: KeyRecords): Step<GateRun> {
  const step = named<GateRun>('idempotency', async (run, next) => {
    const { request, exchange } = run;
    const json = await request.json();
    run.json = json;
    if (json.ok) exchange.body = json.value;
    const header = request.idempotencyKey;
    const valid = typeof header === 'string' && IDEMPOTENCY_KEY_PATTERN.test(header);
    if (valid && json.ok) {
      const begun = records.begin(run.caller, header, records.fingerprint(request.method, request.path, json.value));
      const start = begun instanceof Promise ? await begun : begun;
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
    if (!run.pending && header !== undefined && !valid) run.pending = new ServiceError('invalid_idempotency_key', `Idempotency-Key takes 1-${LIMITS.idempotencyKeyChars} printable ASCII characters (0x21-0x7E).`);
    const lease = run.lease;
    if (!lease) return next();
    try {
      await next();
    } catch (error) {
      lease.finish(null);
      // A released key is released in Redis in the background: the refusal is the answer either way.
      lease.share(null)?.catch((shareError: Error) => records.warn(`could not release an Idempotency-Key in Redis: ${shareError.message}`));
      throw error;
    }
    // Other processes on Redis learn the key once the task is durable here; if Redis fails now the task
    // stands (charged and saved), this process still replays it, and the key's lease holds it elsewhere.
    const shared = lease.share({ status: successOf(run.route), body: run.value });
    if (shared) await shared.catch((error: Error) => records.warn(`could not record an Idempotency-Key in Redis: ${error.message}`));
  });
  // A route without Idempotency-Key goes straight on.
  return named('idempotency', (run, next) => (run.route.idempotent ? step(run, next) : next()));
}

/** The path, query and body by the contract's schemas (404 for a path, 400 and 422 by the contract's codes). */
export function parseInput(): Step<GateRun> {
  const withBody = async (run: GateRun, schema: z.ZodType, params: unknown, query: unknown, next: () => Promise<void>): Promise<void> => {
    run.json = await run.request.json();
    return parsed(run, run.json, schema, params, query, next);
  };
  const parsed = (run: GateRun, json: JsonBody, schema: z.ZodType, params: unknown, query: unknown, next: () => Promise<void>): Promise<void> => {
    if (json.ok) run.exchange.body = json.value;
    if (!json.ok) throw json.error;
    // No body at all where every member is optional (POST /test_helpers/accounts) is the empty object.
    const value = json.value === undefined && bodyOptional(schema) ? {} : json.value;
    run.input = { params, query, body: parse(schema, value, run.route, 'invalid_json') };
    return next();
  };
  // Plain (no promise of its own) but for a body, which is read first.
  return named('parse', (run, next) => {
    if (run.pending) throw run.pending;
    const { route, request } = run;
    const params = route.params ? parse(route.params, request.params, route, 'not_found') : {};
    const query = route.query ? parse(route.query, request.query, route) : {};
    // A body the idempotency step read is not waited for again (one read, no second async frame).
    if (route.body) return run.json ? parsed(run, run.json, route.body, params, query, next) : withBody(run, route.body, params, query, next);
    if (!route.multipart && request.method !== 'GET' && request.method !== 'HEAD') request.discard();
    run.input = { params, query, body: undefined };
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
export const command: Step<GateRun> = named('command', (run, next) => {
  const { params, query, body } = run.input;
  const value = run.command({ caller: run.caller, params, query, body });
  // Plain for a command that answers at once (a read), as most do; a promise is waited for.
  if (!(value instanceof Promise)) {
    run.value = value;
    return next();
  }
  return value.then((answered) => {
    run.value = answered;
    return next();
  });
});

/** Parses a part of the request with its schema, or throws the refusal the contract names for it. */
export function parse(schema: z.ZodType, value: unknown, route: RouteSpec, fallback: 'not_found' | 'invalid_json' | 'invalid_parameter' = 'invalid_parameter'): unknown {
  // A parse with a context (`reportInput`) skips zod's compiled fast path (1.4 µs more on a
  // path, 1.7 on a clip's body); the inputs the refusal quotes are needed only for what fails, parsed again.
  const valid = schema.safeParse(value);
  if (valid.success) return valid.data;
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const options = { fallback: fallback === 'invalid_json' ? 'invalid_parameter' : fallback, ...(route.indexed ? { indexed: route.indexed } : {}) } as const;
  // A body written as a file (a seed fixture) names the member at fault with a JSON Pointer.
  const refusal = route.pointer && fallback === 'invalid_json' ? pointerRefusal(schema, parsed.error.issues, value, options) : refusalOf(schema, parsed.error.issues, value, options);
  // A body that is not an object at all is malformed, not a bad member (spec 7: invalid_json).
  if (fallback === 'invalid_json' && parsed.error.issues[0]?.path.length === 0) throw new ServiceError('invalid_json', route.indexed ? `The body must be a JSON object with ${route.indexed}.` : 'The body must be a JSON object.');
  throw ServiceError.from(refusal);
}

/** The Idempotency-Key records of a caller: scoped to the account here, and in Redis to the key's token. */
export function keyRecords(records: Pick<Idempotency, 'begin'>, warn: (message: string) => void): KeyRecords {
  return {
    begin(caller, key, print) {
      // Each process numbers its own account ids; Redis sees the key's token hash. Without Redis, at once.
      const start = records.begin(String(caller.account.id), key, print, () => tokenHash(caller.key.token));
      if (!(start instanceof Promise)) return start;
      return start.catch((error: Error) => {
        warn(`cannot look up an Idempotency-Key in Redis: ${error.message}`);
        throw new ServiceError('upstream_busy', 'The idempotency records did not answer; nothing was charged. Retry with the same Idempotency-Key.', { retryAfter: 5 });
      });
    },
    fingerprint,
    warn,
  };
}
