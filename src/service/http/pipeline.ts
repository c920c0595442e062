import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteSpec } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import type { GateRun } from '../runner/steps.js';
import { compose, type Outcome, type Step } from '../runner/chain.js';
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
  return (route, handler, params, query, req, res) => {
    const header = req.headers['idempotency-key'];
    let json: Promise<JsonBody> | undefined;
    return chain({
      route,
      operation: route.operationId,
      request: {
        method: req.method ?? 'GET',
        path: (req.url ?? '/').split('?', 1)[0]!,
        authorization: req.headers.authorization,
        address: req.socket.remoteAddress,
        idempotencyKey: header,
        params,
        query,
        json: () => (json ??= readJsonBody(req)),
        discard: () => void req.resume(),
        answered: () => res.headersSent,
        onClose(listener) {
          res.once('close', listener);
          return () => void res.off('close', listener);
        },
        status: () => res.statusCode,
      },
      exchange: { caller: null, idempotencyKey: typeof header === 'string' ? header : null, replayed: false, body: undefined, code: null, dropped: false },
      command: (input) => handler({ ...input, req, res }),
      respond: (outcome) => send(req, res, outcome),
      caller: null as unknown as Caller,
      headers: {},
      cutAfter: false,
      lease: null,
      pending: null,
      input: { params: {}, query: {}, body: undefined },
      value: undefined,
      outcome: null,
    });
  };
}

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
