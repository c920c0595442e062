import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouteSpec } from '../contract/routes.js';
import { NodeResponseSide } from '../http/pipeline.js';
import type { JsonBody, RunRequest } from '../runner/chain.js';

/** What a page does with an outcome that is no answer (a fault rule's cut or hang): as /v1's routes do, by the same function. */
export { unanswered } from '../http/pipeline.js';

// A page performs its operation through the runner's chain, as the route does; the page
// gives the request (its form's fields) and turns the outcome into a page.

/**
 * A page's request as the steps read it: the credential and body its form gave (the form itself was read
 * by the page, bounded), the page's own method and path for the journal, the client's address and
 * connection from node:http.
 */
export class PageRequest extends NodeResponseSide implements RunRequest {
  readonly method: string;
  readonly path: string;
  readonly address: string | undefined;
  readonly idempotencyKey = undefined;
  readonly params: Record<string, string> = {};
  readonly query: Record<string, string> = {};

  constructor(
    readonly req: IncomingMessage,
    res: ServerResponse,
    readonly authorization: string | undefined,
    readonly body: unknown,
    /** The path the journal shows, when the URL holds a credential (a photo upload link's token). @default the request's path */
    path?: string,
  ) {
    super(res);
    this.method = req.method ?? 'POST';
    this.path = path ?? (req.url ?? '/').split('?', 1)[0]!;
    this.address = req.socket.remoteAddress;
  }

  async json(): Promise<JsonBody> {
    return { ok: true, value: this.body };
  }

  discard(): void {}
}
