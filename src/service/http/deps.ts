import type { IncomingMessage } from 'node:http';
import { ServiceError } from '../contract/problems.js';
import type { Caller } from '../core/gate.js';
import { fingerprint } from '../core/idempotency.js';
import { tokenHash } from '../core/redis/client.js';
import { rateLimitHeaders, type RateDecision } from '../core/rate-limit.js';
import { StoreWriteError } from '../core/store.js';
import type { Service } from '../service.js';
import type { PipelineDeps } from './pipeline.js';

/** An admitted caller with the rate-limit headers of its window, or the 429 when the window is full. */
function counted({ caller, decision }: { caller: Caller; decision: RateDecision }): { caller: Caller; headers: Record<string, string>; refusal?: ServiceError } {
  const headers = rateLimitHeaders(decision);
  if (decision.allowed) return { caller, headers };
  return { caller, headers, refusal: new ServiceError('rate_limit_exceeded', `At most ${decision.limit} requests a minute per API key.`, { retryAfter: decision.retryAfter }) };
}

/**
 * What the pipeline asks of the service, from its core: the gate (key, limits, floor), the idempotency
 * records, the store's unit of work, and how an unexpected failure is answered.
 */
export function pipelineDeps(service: Service, report: (error: Error) => void): PipelineDeps<Caller> {
  const { gate, idempotency, store } = service;
  return {
    origin: () => service.origin,
    admit: async (req: IncomingMessage) => counted(await gate.admit(gate.identify(req.headers.authorization, req.socket.remoteAddress))),
    async admitAdmin(req: IncomingMessage, orKey: boolean) {
      const credential = gate.identifyAdmin(req.headers.authorization, req.socket.remoteAddress, { orKey });
      // The admin is no account: no rate window, no rate-limit headers.
      return credential.admin ? { caller: null, headers: {} } : counted(await gate.admit(credential.who));
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
    fault: (route, caller) => service.faultRules.decide({ operation: route.operationId, account: caller?.account.id ?? null }),
    record(route, req, res, exchange, query) {
      // The journal's own helpers are not journalled: reading it would otherwise change what it answers.
      if (route.operationId === 'listRequests' || route.operationId === 'clearRequests') return;
      service.journal.record({
        at: service.clock.now(),
        account: exchange.caller?.account.id ?? null,
        keyId: exchange.caller?.key.id ?? null,
        admin: exchange.admin,
        operation: route.operationId,
        method: req.method ?? 'GET',
        path: (req.url ?? '/').split('?', 1)[0]!,
        query,
        idempotencyKey: exchange.idempotencyKey,
        replayed: exchange.replayed,
        // No answer at all (a fault's cut or hang): status 0.
        status: exchange.dropped ? 0 : res.statusCode,
        code: exchange.code,
        body: exchange.body,
      });
    },
  };
}
