import type { IncomingMessage, ServerResponse } from 'node:http';
import { problem } from '../../protocol/problem.js';
import type { RouteSpec } from '../contract/routes.js';
import { runRoute, type Handler, type PipelineDeps } from './pipeline.js';
import { sendProblem } from './respond.js';

/**
 * A route outside the contract: the service's pages, its file links, the assistant endpoint and its
 * sign-in. It reads its own request and writes its own answer; its path parameters come decoded.
 */
export interface ExtraRoute {
  method: string;
  /** A path template: `/files/assets/{file}`. */
  path: string;
  handle(req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: Record<string, string>): Promise<void> | void;
}

interface Compiled {
  method: string;
  template: string;
  pattern: RegExp;
  names: string[];
  run: (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: Record<string, string>) => Promise<void> | void;
}

/** `/v1/videos/{id}` as a regex, and its parameters' names. */
function compile(template: string): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{([a-z_]+)\\?\}/gi, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${source}$`), names };
}

/**
 * The service's router on node:http, built from the contract's routes (each bound to its handler) and the
 * routes outside it. Unknown paths are 404 `not_found`; a known path with another method is 405
 * `method_not_allowed` with `Allow`; `HEAD` is `GET` without the body (RFC 9110 §9.3.2).
 */
export class ServiceRouter<C> {
  readonly #routes: Compiled[] = [];
  readonly #deps: PipelineDeps<C>;
  readonly #onError: (error: Error) => void;

  constructor(contract: ReadonlyArray<{ route: RouteSpec; handler: Handler<C> }>, extras: readonly ExtraRoute[], deps: PipelineDeps<C>, onError: (error: Error) => void) {
    this.#deps = deps;
    this.#onError = onError;
    for (const { route, handler } of contract) {
      this.#routes.push({ method: route.method, template: route.path, ...compile(route.path), run: (req, res, params, query) => runRoute(route, handler, params, query, req, res, deps) });
    }
    for (const extra of extras) this.#routes.push({ method: extra.method, template: extra.path, ...compile(extra.path), run: extra.handle });
  }

  /** `METHOD /path/{param}` of every route, for the test that the contract and the router agree. */
  get routes(): string[] {
    return this.#routes.map((route) => `${route.method} ${route.template}`);
  }

  /** Answers one request; never throws (an unexpected failure is a 500 with no internals, spec 7). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    // A target that cannot parse (`//`, `http://[`) is a stranger's mistake: a problem, never a crash.
    const url = URL.canParse(target, 'http://service.invalid') ? new URL(target, 'http://service.invalid') : null;
    const path = url?.pathname ?? '/';
    try {
      const method = req.method === 'HEAD' ? 'GET' : req.method;
      let allowed: string[] | null = null;
      for (const route of this.#routes) {
        const match = url && route.pattern.exec(path);
        if (!match) continue;
        if (route.method !== method) {
          (allowed ??= []).push(route.method);
          continue;
        }
        const params: Record<string, string> = {};
        for (const [i, name] of route.names.entries()) params[name] = decodeURIComponent(match[i + 1]!);
        return await route.run(req, res, params, Object.fromEntries(url.searchParams));
      }
      req.resume();
      if (!allowed) return sendProblem(res, problem('not_found', { detail: `Nothing at ${path}.`, instance: path }));
      const methods = [...new Set(allowed)];
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
