import type { IncomingMessage } from 'node:http';
import { ServiceError } from '../contract/problems.js';
import type { Caller } from '../core/gate.js';
import { fingerprint } from '../core/idempotency.js';
import { tokenHash } from '../core/redis/client.js';
import { rateLimitHeaders } from '../core/rate-limit.js';
import { StoreWriteError } from '../core/store.js';
import type { Service } from '../service.js';
import type { PipelineDeps } from './pipeline.js';

/**
 * What the pipeline asks of the service, from its core: the gate (key, limits, floor), the idempotency
 * records, the store's unit of work, and how an unexpected failure is answered.
 */
export function pipelineDeps(service: Service, report: (error: Error) => void): PipelineDeps<Caller> {
  const { gate, idempotency, store } = service;
  return {
    origin: () => service.origin,
    async admit(req: IncomingMessage) {
      const { caller, decision } = await gate.admit(gate.identify(req.headers.authorization, req.socket.remoteAddress));
      const headers = rateLimitHeaders(decision);
      if (decision.allowed) return { caller, headers };
      return { caller, headers, refusal: new ServiceError('rate_limit_exceeded', `At most ${decision.limit} requests a minute per API key.`, { retryAfter: decision.retryAfter }) };
    },
    floor: (caller) => gate.floor(caller.account),
    async beginKey(caller, key, print) {
      try {
        // Scoped to the account here, and in Redis to the key's token (each process numbers its own account ids).
        return await idempotency.begin(String(caller.account.id), key, print, tokenHash(caller.key.token));
      } catch (error) {
        service.warn(`cannot look up an Idempotency-Key in Redis: ${(error as Error).message}`);
        throw new ServiceError('upstream_busy', 'The idempotency records did not answer; nothing was charged. Retry with the same Idempotency-Key.', { retryAfter: 5 });
      }
    },
    fingerprint,
    unit: (run) => store.unit(run),
    failure(error) {
      // Issue 20 item 9: a change the data file could not take was taken back whole: 503, nothing changed.
      if (error instanceof StoreWriteError) {
        service.warn(`a change was not saved and was taken back: ${error.message}`);
        return new ServiceError('upstream_busy', 'The change could not be saved, so nothing was changed or charged. Retry shortly.', { retryAfter: 5 });
      }
      report(error as Error);
      return new ServiceError('internal_error', 'Something went wrong on our side.');
    },
    warn: service.warn,
  };
}
