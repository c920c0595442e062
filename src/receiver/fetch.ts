import { isAborted } from '../http/body-error.js';
import type { ReceiverCore, ReceiverReply } from './core.js';
import { readFetchBody } from './fetch-body.js';
import type { HeaderSource } from './verify-core.js';

/**
 * The answer to a request whose client went away mid-body: nobody reads it, and it is not a refused
 * webhook (the sender never finished sending one), so it carries no problem and no listener hears it.
 * 499 is the status proxies log for a client that closed the request.
 */
export const ABORTED_STATUS = 499;

/**
 * Adapts a receiver to the Fetch API (Next.js route handlers, Hono, Bun, Deno, Workers): reads the raw
 * body of a `Request` up to the limit and answers with a `Response`. Needs no Node module. An adapter that
 * has the headers cheaper than `req.headers` (receiver.hono() on Node) passes them, with the Content-Length.
 */
export async function fetchAdapter(receiver: ReceiverCore, req: Request, headers: HeaderSource = req.headers, length?: string | null): Promise<Response> {
  let result: ReceiverReply;
  try {
    // `length` undefined: readFetchBody reads the Content-Length off `req` itself.
    result = await receiver.receive(await readFetchBody(req, receiver.limit, receiver.bodyTimeout, length), headers);
  } catch (error) {
    if (isAborted(error)) return new Response(null, { status: ABORTED_STATUS });
    result = receiver.refuse(error);
  }
  return new Response(result.body, { status: result.status, headers: result.headers });
}
