import type { ServerResponse } from 'node:http';
import { isAborted } from '../http/body-error.js';
import { bodyError, readNodeBody, wireHeaders, type NodeRequest } from './body.js';
import type { ReceiverCore, ReceiverReply } from './core.js';

/** The middleware signature Express, Connect and plain `node:http` share. */
export type NodeMiddleware = (req: NodeRequest, res: ServerResponse, next?: (error?: unknown) => void) => Promise<void>;

/**
 * Adapts a receiver to Express: reads the raw body (or the Buffer `express.raw()` left), writes the reply.
 * It answers every request it is given, so mount it on the webhook route only.
 */
export function expressAdapter(receiver: ReceiverCore): NodeMiddleware {
  return async function cliphookReceiver(req, res, next) {
    let result: ReceiverReply;
    try {
      const headers = wireHeaders(req);
      let body = readNodeBody(req, receiver, headers);
      if (!Buffer.isBuffer(body)) body = await body;
      result = await receiver.receive(body, headers);
    } catch (error) {
      // The client left mid-body: there is no one to answer and no webhook to refuse (nothing was
      // claimed, no listener hears it); the connection, whose body is half read, is closed.
      if (isAborted(error)) return void res.destroy();
      try {
        result = receiver.refuse(bodyError(error, receiver));
      } catch (unexpected) {
        if (next) return next(unexpected);
        throw unexpected;
      }
    }
    if (res.headersSent) return;
    res.writeHead(result.status, result.headers);
    res.end(result.body);
  };
}
