import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { PROBLEM_CONTENT_TYPE } from '../../protocol/problem.js';
import { fail, withHeaders, type Result } from '../result.js';
import { observe } from './taps.js';

/** Who is calling, once a keyed route's guard let them in; `null` on public routes. */
export interface Guarded<C> {
  caller: C;
  /** Headers every response to this caller carries (the rate-limit ones). */
  headers: Record<string, string>;
}

/** Checks a request before its body is read: a key, a rate limit. Refusing answers at once. */
export type Guard<C> = (req: IncomingMessage) => Promise<{ ok: true; value: Guarded<C> } | { ok: false; result: Result }>;

/** What a route handler gets: the request, its path parameters and query, and its body once read. */
export interface RouteRequest<C = unknown> {
  req: IncomingMessage;
  /** The guard's caller, on keyed routes. */
  caller: C;
  params: Record<string, string>;
  query: Record<string, string>;
  /** The parsed JSON body (`undefined` when the route reads its own body, or there was none). */
  body: unknown;
}

/** A handler answers a `Result`, or writes the response itself (a file) and answers `undefined`. */
export type Handler<C = unknown> = (request: RouteRequest<C>, res: ServerResponse) => Result | Promise<Result | undefined>;

interface Route {
  method: string;
  pattern: RegExp;
  names: string[];
  handler: Handler<unknown>;
  /** Reads its own body (a multipart upload); others get JSON parsed up to the limit. */
  rawBody: boolean;
  guard: Guard<unknown> | null;
}

/** The largest JSON body the API takes (spec 8: "not shown"); a larger one is 413 body_too_large. */
export const MAX_JSON_BYTES = 1024 * 1024;

/**
 * The deepest nesting of arrays and objects a JSON body may have; a deeper one is 400 invalid_json. The
 * API's deepest body (a batch item's image_urls) is 4 levels; bounding it here, once, means nothing
 * downstream (the Idempotency-Key's canonical hash, validation) recurses on a depth a stranger chose
 * (issue 20 item 10: 10,000 levels overflowed the stack).
 */
export const MAX_JSON_DEPTH = 32;

/**
 * A small router on `node:http`, as the relay's: routes by method and path template (`/v1/videos/:id`),
 * JSON bodies read with the project's one body reader, and every refusal a problem of spec section 7:
 * unknown paths are 404 `not_found`, known paths with another method 405 `method_not_allowed` with `Allow`.
 */
export class Router {
  readonly #routes: Route[] = [];
  readonly #around: (run: () => Promise<Result | undefined>) => Promise<Result | undefined>;

  /**
   * `around` runs each handler (the service runs it as one unit of its store: saved whole, or answered 503
   * with nothing changed). @default runs it as it is
   */
  constructor({ around = (run) => run() }: { around?: (run: () => Promise<Result | undefined>) => Promise<Result | undefined> } = {}) {
    this.#around = around;
  }

  add<C>(method: string, template: string, handler: Handler<C>, { rawBody = false, guard = null }: { rawBody?: boolean; guard?: Guard<C> | null } = {}): this {
    const names: string[] = [];
    const source = template.replace(/:([a-z]+)/g, (_, name: string) => {
      names.push(name);
      return '([^/]+)';
    });
    this.#routes.push({ method, pattern: new RegExp(`^${source}$`), names, handler: handler as Handler<unknown>, rawBody, guard: guard as Guard<unknown> | null });
    return this;
  }

  /** Answers one request; never throws (an unexpected failure is a 500 with no internals, spec 7). */
  async handle(req: IncomingMessage, res: ServerResponse, onError: (error: Error) => void): Promise<void> {
    let path = '/';
    let headers: Record<string, string> = {};
    try {
      // A target URL cannot parse (`//`, `http://[`) is a stranger's mistake: a problem, never a crash.
      const url = URL.canParse(req.url ?? '/', 'http://service.invalid') ? new URL(req.url ?? '/', 'http://service.invalid') : null;
      if (!url) {
        req.resume();
        return send(res, fail('not_found', { detail: 'That is not a path this service has.' }));
      }
      path = url.pathname;
      const matches = this.#routes.filter((route) => route.pattern.test(url.pathname));
      // HEAD is GET without the body (RFC 9110 §9.3.2); Node leaves the body out of a HEAD response itself.
      const method = req.method === 'HEAD' ? 'GET' : req.method;
      const route = matches.find((candidate) => candidate.method === method);
      if (!route) {
        req.resume();
        if (matches.length === 0) return send(res, fail('not_found', { detail: `Nothing at ${url.pathname}.`, instance: url.pathname }));
        const methods = [...new Set(matches.map((candidate) => candidate.method))];
        const allow = [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].join(', ');
        const result = fail('method_not_allowed', { detail: `${url.pathname} takes ${allow}.`, instance: url.pathname });
        return send(res, { ...result, headers: { ...result.headers, allow } });
      }
      let params: Record<string, string>;
      try {
        const values = route.pattern.exec(url.pathname)!.slice(1);
        params = Object.fromEntries(route.names.map((name, i) => [name, decodeURIComponent(values[i]!)]));
      } catch {
        req.resume();
        return send(res, fail('not_found', { detail: `Nothing at ${url.pathname}.`, instance: url.pathname }));
      }
      // The key is checked before the body is read: a stranger gets 401, not a parse of what they sent.
      let caller: unknown = null;
      if (route.guard) {
        const guarded = await route.guard(req);
        if (!guarded.ok) {
          req.resume();
          return send(res, withInstance(guarded.result, path));
        }
        caller = guarded.value.caller;
        headers = guarded.value.headers;
      }
      const query = Object.fromEntries(url.searchParams);
      let body: unknown;
      if (!route.rawBody) {
        const read = await readJson(req);
        if (read.ok === false) return send(res, withHeaders(withInstance(read.result, path), headers));
        body = read.value;
      }
      const result = await this.#around(async () => route.handler({ req, caller, params, query, body }, res));
      if (result && !res.headersSent) send(res, withHeaders(withInstance(result, path), headers));
    } catch (error) {
      onError(error as Error);
      if (!res.headersSent) send(res, withHeaders(fail('internal_error', { detail: 'Something went wrong on our side.', instance: path }), headers));
      else res.destroy();
    }
  }
}

/** Writes a result as JSON (a problem as `application/problem+json`). */
export function send(res: ServerResponse, result: Result): void {
  const text = JSON.stringify(result.body);
  const isProblem = result.status >= 400 && typeof result.body === 'object' && result.body !== null && 'code' in result.body;
  res.writeHead(result.status, {
    'content-type': isProblem ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...result.headers,
  });
  res.end(text);
  observe(() => ({ method: res.req?.method ?? 'GET', path: (res.req?.url ?? '/').split('?', 1)[0]!, status: result.status, contentType: isProblem ? PROBLEM_CONTENT_TYPE : 'application/json', body: result.body }));
}

function withInstance(result: Result, path: string): Result {
  const body = result.body as { instance?: unknown } | null;
  if (result.status < 400 || !body || typeof body !== 'object' || body.instance !== null) return result;
  return { ...result, body: { ...body, instance: path } };
}

/** The JSON body, `undefined` for none; 400 invalid_json or 413 body_too_large otherwise. */
async function readJson(req: IncomingMessage): Promise<{ ok: true; value: unknown } | { ok: false; result: Result }> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  let bytes: Buffer;
  try {
    const read = readBody(req, MAX_JSON_BYTES, declared);
    bytes = Buffer.isBuffer(read) ? read : await read;
  } catch (error) {
    if (error instanceof BodyReadError && error.reason === 'too_large') {
      req.resume();
      return { ok: false, result: fail('body_too_large', { detail: `The body is larger than ${MAX_JSON_BYTES} bytes.` }) };
    }
    return { ok: false, result: fail('invalid_json', { detail: 'The body could not be read.' }) };
  }
  if (bytes.length === 0) return { ok: true, value: undefined };
  const text = bytes.toString('utf8');
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
    return { ok: false, result: fail('invalid_json', { detail: `The body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.` }) };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, result: fail('invalid_json', { detail: 'The body is not valid JSON.' }) };
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
