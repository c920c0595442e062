import { ServiceError } from '../contract/problems.js';
import type { RouteSpec } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import { compose, type Exchange, type JsonBody, type KeyLease, type Outcome, type RunRequest, type Step } from './chain.js';
import type { GateRun } from './steps.js';

// The runner's adapter for what is not a request of a contract route: the service's pages
// (a form's fields) and startService()'s helpers (a call in process). The same steps run; only the request
// and how the outcome is sent differ.

/** An operation's command, bound by its caller (the route's handler, a page's own work). */
export type Command = (input: { caller: Caller; params: any; query: any; body: any }) => unknown;

/** Runs one operation through a chain of steps: `respond` sends its outcome, as the caller's transport does. */
export type OperationRun = (route: RouteSpec, command: Command, request: RunRequest, respond: (outcome: Outcome) => Promise<void> | void, options?: { caller?: Caller }) => Promise<void>;

/**
 * The runner for a page or a call in process. `options.caller` runs for a caller its adapter already
 * admitted (a photo upload link names its account: the token is the credential), for a chain without
 * `identify` and `limits`.
 */
export function operationRunner(steps: readonly Step<GateRun>[]): OperationRun {
  const chain = compose(steps);
  return (route, command, request, respond, options = {}) => chain(new OperationCall(route, command, request, respond, options.caller));
}

class OperationCall implements GateRun {
  readonly operation: string;
  readonly exchange: Exchange<Caller>;
  caller: Caller;
  headers: Record<string, string> = {};
  cutAfter = false;
  lease: KeyLease | null = null;
  pending: ServiceError | null = null;
  input: { params: any; query: any; body: any } = { params: {}, query: {}, body: undefined };
  value: unknown = undefined;
  outcome: Outcome | null = null;

  constructor(
    readonly route: RouteSpec,
    readonly command: Command,
    readonly request: RunRequest,
    readonly respond: (outcome: Outcome) => Promise<void> | void,
    caller: Caller | undefined,
  ) {
    this.operation = route.operationId;
    this.caller = caller ?? (null as unknown as Caller);
    const key = request.idempotencyKey;
    this.exchange = { caller: caller ?? null, idempotencyKey: typeof key === 'string' ? key : null, replayed: false, body: undefined, code: null, dropped: false, admin: false };
  }
}

/** A call in process: what a request of the route would carry, as the HTTP adapter reads it (strings for the path and query). */
export interface CallInput {
  authorization?: string;
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  /** The JSON body, as `JSON.stringify` would send it. */
  body?: unknown;
}

/**
 * The request of a call in process (startService()'s helpers): its path is the route's with the params
 * filled in, as the journal shows it; no address, no client to go away. `status()` is the outcome's.
 */
export class CallRequest implements RunRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly address = undefined;
  readonly idempotencyKey = undefined;
  readonly params: Record<string, string>;
  readonly query: Record<string, string>;
  readonly #body: unknown;
  #status = 0;

  constructor(route: RouteSpec, { authorization, params = {}, query = {}, body }: CallInput) {
    this.method = route.method;
    this.authorization = authorization;
    this.params = strings(params);
    this.query = strings(query);
    this.path = route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => encodeURIComponent(this.params[name] ?? ''));
    this.#body = body;
  }

  async json(): Promise<JsonBody> {
    if (this.#body === undefined) return { ok: true, value: undefined };
    try {
      // As the wire carries it: what JSON cannot hold (a function, undefined) is left out, a Date is its string.
      return { ok: true, value: JSON.parse(JSON.stringify(this.#body)) as unknown };
    } catch (error) {
      return { ok: false, error: new ServiceError('invalid_json', `The body cannot be sent as JSON: ${(error as Error).message}`) };
    }
  }

  discard(): void {}

  answered(): boolean {
    return false;
  }

  onClose(): () => void {
    return () => undefined;
  }

  status(): number {
    return this.#status;
  }

  /** Notes what was answered, for the journal step (which reads `status()` after the answer). */
  settle(outcome: Outcome): void {
    this.#status = outcome.kind === 'json' ? outcome.status : outcome.kind === 'problem' ? outcome.body.status : 0;
  }
}

const strings = (values: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined).map(([name, value]) => [name, String(value)]));
