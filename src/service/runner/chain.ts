import type { Problem } from '../../protocol/problem.js';
import type { ServiceError } from '../contract/problems.js';
import type { RouteSpec } from '../contract/routes.js';

// One chain of named steps every operation runs, whoever calls it. A step is a small
// function of the run and the rest of the chain; one that answers early does not call `next`.

/** A request's JSON body (`undefined` when it has none), or the refusal of what was sent. */
export type JsonBody = { ok: true; value: unknown } | { ok: false; error: ServiceError };

/** What a handler answers when it wrote the response itself (a file). */
export const WRITTEN = Symbol('written');

/** A fresh Idempotency-Key: kept with the operation's commit (`finish`), then told to other processes (`share`). */
export interface KeyLease {
  finish(response: { status: number; body: unknown } | null): void;
  /**
   * Nothing to wait for (no promise) when no other process shares the keys: a promise per request shows in
   * the bench's figures.
   */
  share(response: { status: number; body: unknown } | null): Promise<void> | void;
}

/** What the runner learnt of one request, for the request journal. */
export interface Exchange<C> {
  /** The admitted caller; `null` for a public route, the admin token, or a request refused before. */
  caller: C | null;
  /** The `Idempotency-Key` as sent. */
  idempotencyKey: string | null;
  /** Answered from the stored answer of its Idempotency-Key. */
  replayed: boolean;
  /** The JSON body as sent (before the contract read it), when the route takes one and it was read. */
  body: unknown;
  /** The problem code of a refusal. */
  code: string | null;
  /** No answer was sent: a fault rule cut the connection or let it hang. */
  dropped: boolean;
  /** The admin token was admitted (the journal keeps its requests apart). */
  admin: boolean;
}

/** How a run ends, for its adapter to send. */
export type Outcome =
  | { kind: 'json'; status: number; body: unknown; headers: Record<string, string> }
  /** A refusal: its problem body, and the error it was made of (startService()'s helpers throw it). */
  | { kind: 'problem'; body: Problem; headers: Record<string, string>; error: ServiceError }
  /** No answer: the connection is cut (a fault rule). */
  | { kind: 'drop' }
  /** No answer, and the connection is left open until the client gives up (a fault rule's hang). */
  | { kind: 'hang' }
  /** The answer had begun when it failed: the connection is ended. */
  | { kind: 'abort' }
  /** The command wrote its answer itself. */
  | { kind: 'written' };

/** The request as the steps read it, whatever carried it. */
export interface RunRequest {
  method: string;
  /** The path without its query: the problem's `instance` and the Idempotency-Key's fingerprint. */
  path: string;
  authorization: string | undefined;
  address: string | undefined;
  /** The `Idempotency-Key` header as sent. */
  idempotencyKey: string | readonly string[] | undefined;
  params: Record<string, string>;
  query: Record<string, string>;
  /** The JSON body, read once (later calls answer the same). */
  json(): Promise<JsonBody>;
  /** Lets a body nobody reads flow away. */
  discard(): void;
  /** Whether the answer has begun. */
  answered(): boolean;
  /** Calls `listener` once the client is gone; returns what unsubscribes it. */
  onClose(listener: () => void): () => void;
  /** The status sent (0 before any). */
  status(): number;
}

/** One operation's run: its request, what the steps found, and what it answers. */
export interface Run<C> {
  readonly route: RouteSpec;
  /** The operation's name: the route's operationId (or an assistant tool's name). */
  readonly operation: string;
  readonly request: RunRequest;
  readonly exchange: Exchange<C>;
  /** The command, bound by the adapter (a route's handler with its request and response). */
  readonly command: (input: { caller: C; params: any; query: any; body: any }) => unknown;
  /** Sends the outcome, as the adapter's transport does. */
  readonly respond: (outcome: Outcome) => Promise<void> | void;
  /** The admitted caller (`null` for a public route and the admin). */
  caller: C;
  /** Headers every answer carries (the rate-limit window's). */
  headers: Record<string, string>;
  /** A fault rule's `cut: after`: the operation takes effect, and its answer is never sent. */
  cutAfter: boolean;
  /** The key of a fresh Idempotency-Key, held until the commit. */
  lease: KeyLease | null;
  /** A refusal found before the floor that answers only after it (spec 7: a 402 comes first). */
  pending: ServiceError | null;
  /** The path, query and body as the contract parsed them. */
  input: { params: any; query: any; body: any };
  /** What the command answered. */
  value: unknown;
  /** Set by a step that answers early (a replay, a fault rule). */
  outcome: Outcome | null;
}

/** One step: reads and writes the run; calls `next` to go on, or returns to answer early. */
export type Step<R> = ((run: R, next: () => Promise<void>) => Promise<void>) & { readonly stepName?: string };

/**
 * What the test controls read of a run (the composition root plugs them in as steps): a
 * route's request on `/v1`, or an assistant's tool call on `/mcp` (its operation is the tool's name).
 */
export interface ControlledRun<C> {
  readonly operation: string;
  readonly request: Pick<RunRequest, 'method' | 'path' | 'query' | 'onClose' | 'status'>;
  readonly exchange: Exchange<C>;
  caller: C | null;
  cutAfter: boolean;
  outcome: Outcome | null;
}

/**
 * A step with a name (`identify`, `limits` …), for the walk in docs/service.md and a step's tests. A step
 * with nothing to await may be a plain function (no promise of its own per request): its throw is a rejection.
 */
export function named<R>(stepName: string, step: (run: R, next: () => Promise<void>) => Promise<void>): Step<R> {
  const settled = (run: R, next: () => Promise<void>): Promise<void> => {
    try {
      return step(run, next);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return Object.defineProperty(settled, 'stepName', { value: stepName }) as Step<R>;
}

/** The steps as one function, run in order (as koa-compose): a step's `next` runs the rest. */
export function compose<R>(steps: readonly Step<R>[]): (run: R) => Promise<void> {
  return (run) => {
    const dispatch = (i: number): Promise<void> => {
      const step = steps[i];
      if (!step) return Promise.resolve();
      let called = false;
      try {
        return step(run, () => {
          if (called) return Promise.reject(new Error(`The ${step.stepName ?? 'runner'} step called next() twice.`));
          called = true;
          return dispatch(i + 1);
        });
      } catch (error) {
        // A step with nothing to await is a plain function (no promise of its own per request); its throw is a rejection.
        return Promise.reject(error);
      }
    };
    return dispatch(0);
  };
}

/** The route's one 2xx status (202 for a new clip, 207 for a batch, 200 elsewhere). */
export function successOf(route: RouteSpec): number {
  let status = SUCCESS.get(route);
  if (status === undefined) SUCCESS.set(route, (status = Number(Object.keys(route.responses).find((code) => code.startsWith('2')) ?? 200)));
  return status;
}

/** Each route's 2xx status, found once (not a scan of its responses per request). */
const SUCCESS = new WeakMap<RouteSpec, number>();
