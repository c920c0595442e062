import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { PROBLEM_CONTENT_TYPE } from '../../protocol/problem.js';
import { fail, type Result } from '../result.js';

/** What a route handler gets: the request, its path parameters and query, and its body once read. */
export interface RouteRequest {
  req: IncomingMessage;
  params: Record<string, string>;
  query: Record<string, string>;
  /** The parsed JSON body (`undefined` when the route reads its own body, or there was none). */
  body: unknown;
}

/** A handler answers a `Result`, or writes the response itself (a file) and answers `undefined`. */
export type Handler = (request: RouteRequest, res: ServerResponse) => Result | Promise<Result | undefined>;

interface Route {
  method: string;
  pattern: RegExp;
  names: string[];
  handler: Handler;
  /** Reads its own body (a multipart upload); others get JSON parsed up to the limit. */
  rawBody: boolean;
}

/** The largest JSON body the API takes (spec 8: "not shown"); a larger one is 413 body_too_large. */
export const MAX_JSON_BYTES = 1024 * 1024;

/**
 * A small router on `node:http`, as the relay's: routes by method and path template (`/v1/videos/:id`),
 * JSON bodies read with the project's one body reader, and every refusal a problem of spec section 7:
 * unknown paths are 404 `not_found`, known paths with another method 405 `method_not_allowed` with `Allow`.
 */
export class Router {
  readonly #routes: Route[] = [];

  add(method: string, template: string, handler: Handler, { rawBody = false } = {}): this {
    const names: string[] = [];
    const source = template.replace(/:([a-z]+)/g, (_, name: string) => {
      names.push(name);
      return '([^/]+)';
    });
    this.#routes.push({ method, pattern: new RegExp(`^${source}$`), names, handler, rawBody });
    return this;
  }

  /** Answers one request; never throws (an unexpected failure is a 500 with no internals, spec 7). */
  async handle(req: IncomingMessage, res: ServerResponse, onError: (error: Error) => void): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://service.invalid');
    try {
      const matches = this.#routes.filter((route) => route.pattern.test(url.pathname));
      const route = matches.find((candidate) => candidate.method === req.method);
      if (!route) {
        req.resume();
        if (matches.length === 0) return send(res, fail('not_found', { detail: `Nothing at ${url.pathname}.`, instance: url.pathname }));
        const allow = [...new Set(matches.map((candidate) => candidate.method))].join(', ');
        const result = fail('method_not_allowed', { detail: `${url.pathname} takes ${allow}.`, instance: url.pathname });
        return send(res, { ...result, headers: { ...result.headers, allow } });
      }
      const values = route.pattern.exec(url.pathname)!.slice(1);
      const params = Object.fromEntries(route.names.map((name, i) => [name, decodeURIComponent(values[i]!)]));
      const query = Object.fromEntries(url.searchParams);
      let body: unknown;
      if (!route.rawBody) {
        const read = await readJson(req);
        if (read.ok === false) return send(res, { ...read.result, body: { ...(read.result.body as object), instance: url.pathname } });
        body = read.value;
      }
      const result = await route.handler({ req, params, query, body }, res);
      if (result && !res.headersSent) send(res, withInstance(result, url.pathname));
    } catch (error) {
      onError(error as Error);
      if (!res.headersSent) send(res, fail('internal_error', { detail: 'Something went wrong on our side.', instance: url.pathname }));
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
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch {
    return { ok: false, result: fail('invalid_json', { detail: 'The body is not valid JSON.' }) };
  }
}
