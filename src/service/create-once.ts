import { MIN_BALANCE_FOR_KEYS } from './core/accounts.js';
import { fingerprint, parseIdempotencyKey } from './core/idempotency.js';
import { tokenHash } from './core/redis/client.js';
import { fail, notSaved, type Result } from './result.js';
import type { Caller, Service } from './service.js';
import { StoreWriteError } from './core/store.js';

/** What a creating operation made: its answer. If it cannot be saved, the store's unit takes it back. */
export interface Created {
  result: Result;
}

/** What a caller of a creating operation may add to its commit. */
export interface CreateHooks {
  /**
   * Called with a successful answer just before the commit that makes it durable, so records of the
   * caller's own (the assistant's ledger) join the same commit. Returns how to take them back if that
   * write fails.
   */
  beforeCommit?: (result: Result) => (() => void) | void;
}

/**
 * Runs an operation that charges and creates tasks (POST /videos, /videos/batch, /images) under the rules
 * of spec section 7, and makes it durable before it answers:
 * - `Idempotency-Key` syntax (400), a replay of the first response with `Idempotent-Replayed: true`,
 *   409 while the first still runs, 422 for another request under the key;
 * - 402 below 10 credits (spec 4) only after the replay check: a replay answers whatever the balance;
 * - the tasks, the charge and the key's record go to disk in one commit, as one unit of the store: if
 *   that write fails, the unit takes all of it back (the charge, the tasks and their timers, the key's
 *   record) and the key is released: 503 upstream_busy with Retry-After, nothing charged (issue 20 item 9).
 * A refusal before any task existed releases the key.
 */
export async function createOnce(
  service: Service,
  caller: Caller,
  header: string | string[] | undefined,
  path: string,
  body: unknown,
  run: () => Promise<Created>,
  { beforeCommit }: CreateHooks = {},
): Promise<Result> {
  const key = parseIdempotencyKey(header);
  if (key === false) return fail('invalid_idempotency_key', { detail: 'Idempotency-Key takes 1-255 printable ASCII characters (0x21-0x7E).' });
  const scope = String(caller.account.id);
  const sharedScope = tokenHash(caller.key.token);
  // Hashed outside the try below: only the idempotency records' own failure (Redis) is answered as one
  // (issue 20 item 10: a stack overflow while hashing was reported as Redis being busy).
  const print = key === null ? null : fingerprint('POST', path, body);
  let start;
  try {
    start = key === null || print === null ? null : await service.idempotency.begin(scope, key, print, sharedScope);
  } catch (error) {
    // Redis (`redisUrl`) did not answer: nothing was charged, and the same request may be sent again.
    service.warn(`cannot look up an Idempotency-Key in Redis: ${(error as Error).message}`);
    return fail('upstream_busy', { detail: 'The idempotency records did not answer; nothing was charged. Retry with the same Idempotency-Key.', retryAfter: 5 });
  }
  if (start?.kind === 'replay') return { ...start.response, headers: { 'idempotent-replayed': 'true' } };
  if (start?.kind === 'in_progress') return fail('idempotency_in_progress', { detail: 'The first request with this Idempotency-Key is still running.', retryAfter: 1 });
  if (start?.kind === 'reused') return fail('idempotency_key_reused', { detail: 'This Idempotency-Key was used with a different request; use a new key.' });
  let finished = false;
  const finish = (response: Result | null) => {
    finished = true;
    if (start?.kind !== 'fresh') return;
    const stored = response && { status: response.status, body: response.body };
    start.finish(stored);
    // A released key is released in Redis in the background: the refusal is the answer either way.
    if (!stored) start.share(null).catch((error: Error) => service.warn(`could not release an Idempotency-Key in Redis: ${error.message}`));
  };
  let undoHook: (() => void) | void = undefined;
  try {
    if (caller.account.balance < MIN_BALANCE_FOR_KEYS) {
      finish(null);
      return service.insufficient(caller.account, MIN_BALANCE_FOR_KEYS, `API keys work while the balance is at least ${MIN_BALANCE_FOR_KEYS} credits.`);
    }
    let result: Result;
    try {
      result = await service.store.unit(async () => {
        const { result: made } = await run();
        if (made.status < 200 || made.status >= 300) return made;
        // The key's record (and the caller's own, `beforeCommit`) join the tasks in the same commit: a crash keeps all or none.
        undoHook = beforeCommit?.(made);
        finish(made);
        // Whatever the commit rejects with, the write did not happen.
        await service.store.commit().catch((error: unknown) => {
          throw error instanceof StoreWriteError ? error : new StoreWriteError(error);
        });
        return made;
      });
    } catch (error) {
      // The unit took its rows back; what the caller keeps in memory of its own goes too, and the key is free again.
      (undoHook as (() => void) | void)?.();
      if (key !== null) await service.idempotency.forget(scope, key, sharedScope).catch(() => undefined);
      if (error instanceof StoreWriteError) return notSaved();
      throw error;
    }
    if (result.status < 200 || result.status >= 300) {
      finish(null);
      return result;
    }
    if (start?.kind === 'fresh') {
      // Other processes learn the key once the task is durable here. If Redis fails now the task stands
      // (it is charged and saved): answering it is right, this process still replays the key itself, and
      // the record is written again in the background while the key's running lease holds it elsewhere.
      await start.share({ status: result.status, body: result.body }).catch((error: Error) => service.warn(`could not record an Idempotency-Key in Redis: ${error.message}`));
    }
    return result;
  } finally {
    if (!finished) finish(null);
  }
}
