import type { IncomingMessage, ServerResponse } from 'node:http';
import { problem } from '../../protocol/problem.js';
import type { RouteSpec } from '../contract/routes.js';
import type { Caller } from '../core/gate.js';
import type { Handler, RouteRun } from './pipeline.js';
import { sendProblem } from './respond.js';
import { parseUrl } from '../../http/url.js';

/**
 * A route outside the contract: the service's pages, its file links, the assistant endpoint and its
 * sign-in. It reads its own request and writes its own answer; its path parameters come decoded.
 */
export interface ExtraRoute {
  method: string;
  /** A path template: `/files/assets/{file}`. */
  path: string;
  /** `path`: the path the router matched (dot segments resolved): a problem's `instance`. */
  handle(req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: Record<string, string>, path: string): Promise<void> | void;
}

/** `path`: the path as the router matched it (the URL parser's: dot segments resolved), what a run reads as the request's. */
type Run = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: Record<string, string>, path: string) => Promise<void> | void;

/** A path template as segments, and the routes on it by method. */
interface Template {
  template: string;
  /** Each segment: its fixed text, or `null` for a `{param}`. */
  segments: readonly (string | null)[];
  names: string[];
  /** Which of two matching templates wins: the one whose first differing segment is fixed (`0` before `1`). */
  rank: string;
  methods: Map<string, Run>;
}

/** `/v1/videos/{id}` as its segments (`['v1', 'videos', null]`) and its parameters' names. */
function compile(template: string): Pick<Template, 'segments' | 'names' | 'rank'> {
  const names: string[] = [];
  const segments = template.split('/').slice(1).map((segment) => {
    const param = /^\{([a-z_]+)\}$/i.exec(segment);
    if (param) {
      names.push(param[1]!);
      return null;
    }
    if (segment.includes('{') || segment.includes('}')) throw new TypeError(`A route's path parameter is a whole segment: got ${template}.`);
    return segment;
  });
  return { segments, names, rank: segments.map((segment) => (segment === null ? '1' : '0')).join('') };
}

/** The decoded values of a template's parameters when it matches the (decoded) segments of a path, else `null`. */
function matchOf(template: Template, path: readonly string[]): Record<string, string> | null {
  if (template.segments.length !== path.length) return null;
  const params: Record<string, string> = {};
  let name = 0;
  for (const [i, segment] of template.segments.entries()) {
    if (segment === null) {
      if (path[i] === '') return null;
      params[template.names[name++]!] = path[i]!;
    } else if (segment !== path[i]) return null;
  }
  return params;
}

/** A request target as the router reads it: its path, whether it needs no decoding, and its query. */
export interface RequestTarget {
  /**
   * The path as the WHATWG URL parser gives it (dot segments resolved, characters percent-encoded), with its
   * percent-encodings normalised (`normalisePercentEncoding`): what the router matches and a run fingerprints.
   */
  path: string;
  /** Nothing in the path to decode: its segments are as written. */
  plain: boolean;
  query(): Record<string, string>;
}

const NO_QUERY = (): Record<string, string> => ({});

/**
 * Parses a request target; `null` when it cannot parse (`http://[`): a stranger's mistake, a problem, never
 * a crash (`parseUrl`, not `URL.canParse`, which on Node 20 can refuse what `new URL` takes). For speed,
 * a path of letters, digits, `_`, `-` and single slashes, with no query
 * (`/v1/videos/123`, nearly every request) is what the URL parser would give back as it is, so it is not
 * parsed (1.1 µs a request); anything else goes through the parser.
 */
export function requestTarget(target: string): RequestTarget | null {
  if (isPlainPath(target)) return { path: target, plain: true, query: NO_QUERY };
  const url = parseUrl(target, 'http://service.invalid');
  if (!url) return null;
  return { path: normalisePercentEncoding(url.pathname), plain: false, query: () => Object.fromEntries(url.searchParams) };
}

/**
 * A path's percent-encodings as RFC 3986 §6.2.2 compares them: an unreserved character (§2.3: ALPHA, DIGIT,
 * `-`, `.`, `_`, `~`) encoded is the character itself (§6.2.2.2), and the rest are written with upper-case
 * hex (§6.2.2.1). So `/v1/%76ideos` is `/v1/videos` to the router and to an Idempotency-Key's fingerprint.
 * Only unreserved characters are decoded, none of which is `%` or `/`: a segment never decodes twice, nor splits.
 * @example normalisePercentEncoding('/v1/%76ideos/a%2fb') // '/v1/videos/a%2Fb'
 */
export function normalisePercentEncoding(path: string): string {
  if (!path.includes('%')) return path;
  return path.replace(PERCENT_ENCODED, (_, hex: string) => {
    const code = Number.parseInt(hex, 16);
    return isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`;
  });
}

const PERCENT_ENCODED = /%([0-9A-Fa-f]{2})/g;

const isUnreserved = (code: number): boolean =>
  (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39) || code === 0x2d || code === 0x2e || code === 0x5f || code === 0x7e;

/** `/` then letters, digits, `_`, `-` and slashes, never two slashes in a row (`//host` is another origin). */
function isPlainPath(target: string): boolean {
  if (target.charCodeAt(0) !== 0x2f) return false;
  for (let i = 1; i < target.length; i++) {
    const code = target.charCodeAt(i);
    if (code === 0x2f) {
      if (target.charCodeAt(i - 1) === 0x2f) return false;
    } else if (!((code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39) || code === 0x5f || code === 0x2d)) return false;
  }
  return true;
}

/**
 * The service's router on node:http, built from the contract's routes (each bound to its handler) and the
 * routes outside it. A path matches templates segment by segment, and where two match, the one with a fixed
 * segment where the other has a parameter wins (`/v1/videos/batch` over `/v1/videos/{id}`). Unknown paths
 * are 404 `not_found`; a known path with another method is 405 `method_not_allowed` with `Allow` (its own
 * template's methods); `HEAD` is `GET` without the body (RFC 9110 §9.3.2).
 */
export class ServiceRouter {
  readonly #templates = new Map<string, Template>();
  readonly #onError: (error: Error) => void;

  constructor(contract: ReadonlyArray<{ route: RouteSpec; handler: Handler<Caller> }>, extras: readonly ExtraRoute[], runRoute: RouteRun, onError: (error: Error) => void) {
    this.#onError = onError;
    for (const { route, handler } of contract) this.#add(route.method, route.path, (req, res, params, query, path) => runRoute(route, handler, params, query, req, res, path));
    for (const extra of extras) this.#add(extra.method, extra.path, extra.handle);
  }

  #add(method: string, path: string, run: Run): void {
    let template = this.#templates.get(path);
    if (!template) this.#templates.set(path, (template = { template: path, ...compile(path), methods: new Map() }));
    if (template.methods.has(method)) throw new TypeError(`${method} ${path} is routed twice.`);
    template.methods.set(method, run);
  }

  /** `METHOD /path/{param}` of every route, for the test that the contract and the router agree. */
  get routes(): string[] {
    return [...this.#templates.values()].flatMap((template) => [...template.methods.keys()].map((method) => `${method} ${template.template}`));
  }

  /** The template a path's decoded segments name (the fixed one of two that match), and its parameters. */
  #find(segments: readonly string[]): { template: Template; params: Record<string, string> } | null {
    let best: { template: Template; params: Record<string, string> } | null = null;
    for (const template of this.#templates.values()) {
      if (best && template.rank >= best.template.rank) continue;
      const params = matchOf(template, segments);
      if (params) best = { template, params };
    }
    return best;
  }

  /** Answers one request; never throws (an unexpected failure is a 500 with no internals, spec 7). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = requestTarget(req.url ?? '/');
    const path = target?.path ?? '/';
    try {
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      // Segments are compared decoded, so `/v1/videos/%62atch` is the batch path too.
      const found = target ? this.#find(target.plain ? path.split('/').slice(1) : path.split('/').slice(1).map(decodeURIComponent)) : null;
      const run = found?.template.methods.get(method);
      if (found && run) return await run(req, res, found.params, target!.query(), path);
      req.resume();
      if (!found) return sendProblem(res, problem('not_found', { detail: `Nothing at ${path}.`, instance: path }));
      const methods = [...found.template.methods.keys()];
      const allow = [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].join(', ');
      sendProblem(res, problem('method_not_allowed', { detail: `${path} takes ${allow}.`, instance: path }), { allow });
    } catch (error) {
      // A path segment that does not decode (`%zz`) names nothing here.
      if (error instanceof URIError) return sendProblem(res, problem('not_found', { detail: `Nothing at ${path}.`, instance: path }));
      this.#onError(error as Error);
      if (!res.headersSent) sendProblem(res, problem('internal_error', { detail: 'Something went wrong on our side.', instance: path }));
      else res.destroy();
    }
  }
}
