import { readFetchBody } from './body.js';
import type { Receiver, ReceiverReply } from './core.js';

/**
 * Adapts a receiver to the Fetch API (Next.js route handlers, Hono, Bun, Deno, Workers): reads the raw
 * body of a `Request` up to the limit and answers with a `Response`.
 */
export async function fetchAdapter(receiver: Receiver, req: Request): Promise<Response> {
  let result: ReceiverReply;
  try {
    result = await receiver.receive(await readFetchBody(req, receiver.limit), req.headers);
  } catch (error) {
    result = receiver.refuse(error);
  }
  return new Response(result.body, { status: result.status, headers: result.headers });
}
