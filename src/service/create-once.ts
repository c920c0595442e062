import { MIN_BALANCE_FOR_KEYS } from './accounts.js';
import { fingerprint, parseIdempotencyKey } from './idempotency.js';
import { tokenHash } from './redis/client.js';
import { fail, type Result } from './result.js';
import type { Caller, Service } from './service.js';

/** What a creating operation made: its answer, and how to take it back if it cannot be saved. */
export interface Created {
  result: Result;
  /** Refunds and removes what was made (tasks, jobs): the write failed, so nothing of it may stay. */
  undo?: () => void;
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
 * - the tasks, the charge and the key's record go to disk in one commit. If that write fails, the charge
 *   is refunded, the tasks removed and the key released: 500 task_create_failed, as the spec says.
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
  try {
    if (caller.account.balance < MIN_BALANCE_FOR_KEYS) {
      finish(null);
      return service.insufficient(caller.account, MIN_BALANCE_FOR_KEYS, `API keys work while the balance is at least ${MIN_BALANCE_FOR_KEYS} credits.`);
    }
    const created = await run();
    const { result } = created;
    if (result.status < 200 || result.status >= 300) {
      finish(null);
      return result;
    }
    // The key's record (and the caller's own, `beforeCommit`) join the tasks in the same commit: a crash keeps all or none.
    const undoHook = beforeCommit?.(result);
    finish(result);
    try {
      await service.store.commit();
    } catch {
      undoHook?.();
      created.undo?.();
      if (key !== null) await service.idempotency.forget(scope, key, sharedScope).catch(() => undefined);
      return fail('task_create_failed', { detail: 'The task could not be saved; the credits were refunded. Retry with the same Idempotency-Key.' });
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
