import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyReadError, readBody } from '../../http/read-body.js';
import type { RouteSpec } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import type { GateRun } from '../runner/steps.js';
import { LIMITS } from '../contract/limits.js';
import { ServiceError } from '../contract/problems.js';
import { compose, type Exchange, type JsonBody, type KeyLease, type Outcome, type RunRequest, type Step } from '../runner/chain.js';
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
export type RouteRun = (route: RouteSpec, handler: Handler<Caller>, rawParams: Record<string, string>, query: Record<string, string>, req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;

/**
 * The HTTP adapter of the runner: turns a request of a contract route into a run of
 * the chain of `steps`, and the run's outcome into the response. The steps know no node:http.
 */
export function routeRunner(steps: readonly Step<GateRun>[]): RouteRun {
  const chain = compose(steps);
  return (route, handler, params, query, req, res, path) => chain(new HttpRun(route, handler, params, query, req, res, path));
}

/** What a run reads of a node:http response (answered yet, closed, its status): a route's request and a page's share it. */
export abstract class NodeResponseSide {
  constructor(readonly res: ServerResponse) {}

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

/** A request of node:http as the steps read it; its methods on the prototype, so a request makes no closures for them. */
class HttpRequest extends NodeResponseSide implements RunRequest {
  readonly method: string;
  readonly authorization: string | undefined;
  readonly address: string | undefined;
  readonly idempotencyKey: string | readonly string[] | undefined;
  #json: Promise<JsonBody> | undefined;

  constructor(
    readonly params: Record<string, string>,
    readonly query: Record<string, string>,
    readonly req: IncomingMessage,
    res: ServerResponse,
    /** The router's path (the URL parser's, dot segments resolved, with its percent-encodings normalised: `/v1/./videos` and `/v1/%76ideos` fingerprint and name their problems as `/v1/videos`). */
    readonly path: string,
  ) {
    super(res);
    this.method = req.method ?? 'GET';
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
    path: string,
  ) {
    this.operation = route.operationId;
    this.request = new HttpRequest(params, query, req, res, path);
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
    case 'written':
      return undefined;
    default:
      return unanswered(req, res, outcome);
  }
}

/**
 * What node:http does with an outcome that is no answer: a cut (`drop`, a fault rule) or an answer that
 * failed once begun (`abort`) ends the connection; a `hang` leaves it open until the client goes (resolves
 * then). `undefined` for an answer (JSON, a problem, written), which the caller writes as it does: a route
 * as JSON, a page as a page. The one place for /v1's routes and the pages.
 */
export function unanswered(req: IncomingMessage, res: ServerResponse, outcome: Outcome): Promise<void> | undefined {
  switch (outcome.kind) {
    case 'drop':
      if (!req.readableEnded) req.resume();
      res.destroy();
      return Promise.resolve();
    case 'abort':
      res.destroy();
      return Promise.resolve();
    case 'hang':
      req.resume();
      // Never answered: the request ends when the client gives up (or the server closes).
      return new Promise<void>((resolve) => res.once('close', () => resolve()));
    default:
      return undefined;
  }
}

// The JSON body of a request: read here, by the adapter that asks for it, not in a module of its own.

/** The largest JSON body the API takes (spec 8: "not shown"); a larger one is 413 body_too_large. */
export const MAX_JSON_BYTES = LIMITS.jsonBodyBytes;

/**
 * The deepest nesting of arrays and objects a JSON body may have; a deeper one is 400 invalid_json. The
 * API's deepest body (a batch item's image_urls) is 4 levels; bounding it here, once, means nothing
 * downstream (the Idempotency-Key's canonical hash, validation) recurses on a depth a stranger chose
 * (10,000 levels would overflow the stack).
 */
export const MAX_JSON_DEPTH = 32;

export type { JsonBody } from '../runner/chain.js';

/**
 * Whether a `Content-Type` names JSON: `application/json` (with any parameters, `charset=utf-8` say) or a
 * `+json` structured syntax suffix type (RFC 6839: `application/merge-patch+json`), in any case.
 */
export function isJsonMediaType(header: string | undefined): boolean {
  const type = header?.split(';', 1)[0]!.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.-][a-z0-9!#$&^_.+-]{0,120}\+json$/.test(type);
}

/** The 415 of a body whose `Content-Type` is not JSON. */
function notJson(header: string | undefined): ServiceError {
  const sent = header === undefined ? 'with no Content-Type' : `as ${JSON.stringify(header.slice(0, 100))}`;
  return new ServiceError('unsupported_media_type', `The body was sent ${sent}; send it as application/json (Content-Type: application/json).`);
}

/**
 * Reads and parses a JSON body with the project's one body reader: 413 body_too_large past 1 MiB, 400
 * invalid_json, 415 unsupported_media_type for bytes not declared JSON. No body at all needs no type.
 */
export async function readJsonBody(req: IncomingMessage): Promise<JsonBody> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  const type = req.headers['content-type'];
  // A body sent as text/plain (fetch's default for a string) or untyped is refused, before
  // anything is charged, so an integration that forgets the header fails here and not in production.
  if (declared > 0 && !isJsonMediaType(type)) {
    req.resume();
    return { ok: false, error: notJson(type) };
  }
  let bytes: Buffer;
  try {
    const read = readBody(req, MAX_JSON_BYTES, declared);
    bytes = Buffer.isBuffer(read) ? read : await read;
  } catch (error) {
    if (error instanceof BodyReadError && error.reason === 'too_large') {
      req.resume();
      return { ok: false, error: new ServiceError('body_too_large', `The body is larger than ${MAX_JSON_BYTES} bytes.`) };
    }
    return { ok: false, error: new ServiceError('invalid_json', 'The body could not be read.') };
  }
  if (bytes.length === 0) return { ok: true, value: undefined };
  if (!isJsonMediaType(type)) return { ok: false, error: notJson(type) };
  const text = bytes.toString('utf8');
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) return { ok: false, error: new ServiceError('invalid_json', `The body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`) };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, error: new ServiceError('invalid_json', 'The body is not valid JSON.') };
  }
}

/**
 * Whether JSON text opens more than `max` arrays or objects inside one another, by one pass over its
 * characters (no recursion, nothing built): brackets inside strings do not count. Text that is not JSON
 * gets an answer too; JSON.parse then refuses it.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c) i++; // a backslash escapes the next character
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      if (++depth > max) return true;
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
  return false;
}
