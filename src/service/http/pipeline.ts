import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteSpec } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import type { GateRun } from '../runner/steps.js';
import type { ServiceError } from '../contract/problems.js';
import { compose, type Exchange, type KeyLease, type Outcome, type RunRequest, type Step } from '../runner/chain.js';
import { readJsonBody, type JsonBody } from './body.js';
import { sendJson, sendProblem } from './respond.js';

export { WRITTEN } from '../runner/chain.js';
export { parse } from '../runner/steps.js';

/**
 * One route of the contract on node:http: what it answers once every check passed. It gets its path
 * parameters, query and body parsed by the contract's schemas, and answers a JSON body (sent with the
 * route's 2xx status), or writes the response itself (a file) and answers `WRITTEN`.
 */
export type Handler<C> = (input: { caller: C; params: any; query: any; body: any; req: IncomingMessage; res: ServerResponse }) => unknown;

/** Runs one request of a contract route through the runner's chain. */
export type RouteRun = (route: RouteSpec, handler: Handler<Caller>, rawParams: Record<string, string>, query: Record<string, string>, req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * The HTTP adapter of the runner (issue 31 item 1): turns a request of a contract route into a run of
 * the chain of `steps`, and the run's outcome into the response. The steps know no node:http.
 */
export function routeRunner(steps: readonly Step<GateRun>[]): RouteRun {
  const chain = compose(steps);
  return (route, handler, params, query, req, res) => chain(new HttpRun(route, handler, params, query, req, res));
}

/** A request of node:http as the steps read it; its methods on the prototype, so a request makes no closures for them. */
class HttpRequest implements RunRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly address: string | undefined;
  readonly idempotencyKey: string | readonly string[] | undefined;
  #json: Promise<JsonBody> | undefined;

  constructor(
    readonly params: Record<string, string>,
    readonly query: Record<string, string>,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    this.method = req.method ?? 'GET';
    this.path = (req.url ?? '/').split('?', 1)[0]!;
    this.authorization = req.headers.authorization;
    this.address = req.socket.remoteAddress;
    this.idempotencyKey = req.headers['idempotency-key'];
  }

  json(): Promise<JsonBody> {
    return (this.#json ??= readJsonBody(this.req));
  }

  discard(): void {
    this.req.resume();
  }

  answered(): boolean {
    return this.res.headersSent;
  }

  onClose(listener: () => void): () => void {
    this.res.once('close', listener);
    return () => void this.res.off('close', listener);
  }

  status(): number {
    return this.res.statusCode;
  }
}

/** One run of a contract route on node:http. */
class HttpRun implements GateRun {
  readonly operation: string;
  readonly request: HttpRequest;
  readonly exchange: Exchange<Caller>;
  caller = null as unknown as Caller;
  headers: Record<string, string> = {};
  cutAfter = false;
  lease: KeyLease | null = null;
  pending: ServiceError | null = null;
  input: { params: any; query: any; body: any } = EMPTY_INPUT;
  value: unknown = undefined;
  outcome: Outcome | null = null;

  constructor(
    readonly route: RouteSpec,
    readonly handler: Handler<Caller>,
    params: Record<string, string>,
    query: Record<string, string>,
    req: IncomingMessage,
    res: ServerResponse,
  ) {
    this.operation = route.operationId;
    this.request = new HttpRequest(params, query, req, res);
    const header = this.request.idempotencyKey;
    this.exchange = { caller: null, idempotencyKey: typeof header === 'string' ? header : null, replayed: false, body: undefined, code: null, dropped: false, admin: false };
  }

  command(input: { caller: Caller; params: any; query: any; body: any }): unknown {
    return this.handler({ caller: input.caller, params: input.params, query: input.query, body: input.body, req: this.request.req, res: this.request.res });
  }

  respond(outcome: Outcome): Promise<void> | void {
    return send(this.request.req, this.request.res, outcome);
  }
}

const EMPTY_INPUT = Object.freeze({ params: {}, query: {}, body: undefined });

/** Writes a run's outcome on node:http. */
function send(req: IncomingMessage, res: ServerResponse, outcome: Outcome): Promise<void> | void {
  switch (outcome.kind) {
    case 'json':
      return sendJson(res, outcome.status, outcome.body, outcome.headers);
    case 'problem':
      if (!req.readableEnded) req.resume();
      return sendProblem(res, outcome.body, outcome.headers);
    case 'drop':
      if (!req.readableEnded) req.resume();
      return void res.destroy();
    case 'abort':
      return void res.destroy();
    case 'hang':
      req.resume();
      // Never answered: the request ends when the client gives up (or the server closes).
      return new Promise<void>((resolve) => res.once('close', () => resolve()));
    case 'written':
      return undefined;
  }
}
