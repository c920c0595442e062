import { ServiceError } from '../contract/problems.js';
import type { Caller } from '../core/gate.js';
import type { AssistantRow } from './connections.js';
import type { AssistantSignIn } from './sign-in.js';
import type { AssistantSpending } from './spending.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The assistants connected to the account (`/settings/assistants`): list them with their limits and
 * spending, change an assistant's daily limit, or disconnect it (spec 5.7).
 */
export class AssistantSettings {
  readonly #clock: { now(): number };
  readonly #signIn: AssistantSignIn;
  readonly #spending: AssistantSpending;

  constructor({ clock }: { clock: { now(): number } }, signIn: AssistantSignIn, spending: AssistantSpending) {
    this.#clock = clock;
    this.#signIn = signIn;
    this.#spending = spending;
  }

  /** GET /settings/assistants */
  list(caller: Caller) {
    return { object: 'list' as const, data: this.#signIn.connections.of(caller.account.id).map((row) => this.#view(row, caller)) };
  }

  /** PATCH /settings/assistants/{id} `{ "daily_limit": 50 }`, or `null` for the default (the contract checked its bounds). */
  async update(caller: Caller, id: string, dailyLimit: number | null) {
    const row = this.#own(caller, id);
    if (!row) throw new ServiceError('not_found', `No assistant ${id}.`);
    if (row.disconnectedAt !== null) throw new ServiceError('not_found', `Assistant ${id} was disconnected.`);
    const changed = await this.#signIn.connections.setDailyLimit(row, dailyLimit);
    return this.#view(changed, caller);
  }

  /** DELETE /settings/assistants/{id}: its tokens stop working at once. */
  async disconnect(caller: Caller, id: string) {
    const row = this.#own(caller, id);
    if (!row || row.disconnectedAt !== null) throw new ServiceError('not_found', `No connected assistant ${id}.`);
    const ended = await this.#signIn.disconnect(row);
    return { id: ended.id, object: 'assistant' as const, disconnected: true as const, disconnected_at: iso(ended.disconnectedAt) };
  }

  #own(caller: Caller, id: string): AssistantRow | undefined {
    const row = this.#signIn.connections.get(id);
    return row && row.accountId === caller.account.id ? row : undefined;
  }

  #view(row: AssistantRow, caller: Caller) {
    const limit = this.#signIn.connections.dailyLimit(row, caller.account);
    const used = this.#spending.usedToday(row.id);
    return {
      id: row.id,
      object: 'assistant' as const,
      kind: row.kind,
      name: row.name,
      client_id: row.clientId,
      key_id: row.keyId,
      daily_limit: limit,
      daily_limit_is_default: row.dailyLimit === null,
      used_today: used,
      remaining_today: Math.max(0, limit - used),
      running_clips: this.#spending.runningClips(row.id),
      connected_at: iso(row.createdAt),
      disconnected_at: iso(row.disconnectedAt),
      // The service's clock: the same one the daily limit is counted on.
      as_of: iso(this.#clock.now()),
    };
  }
}
