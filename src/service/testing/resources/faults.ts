import type { FaultRuleInput } from '../contract/test-helpers.js';
import type { Caller } from '../../core/gate.js';
import type { FaultRules } from '../../testing/faults.js';

/**
 * Fault rules' helpers, without HTTP: `POST`, `GET` and `DELETE /test_helpers/faults`. The admin
 * token (`caller` null) makes rules for any account (or every one) and sees them all; an API key makes,
 * sees and deletes only its own account's.
 */
export class FaultRuleCommands {
  readonly #rules: FaultRules;

  constructor(rules: FaultRules) {
    this.#rules = rules;
  }

  add(caller: Caller | null, input: FaultRuleInput) {
    return this.#rules.add(input, who(caller));
  }

  list(caller: Caller | null, { account }: { account?: number | undefined }) {
    return { data: this.#rules.list(who(caller), { account }) };
  }

  remove(caller: Caller | null, id: string) {
    return { id: this.#rules.remove(id, who(caller)).id, deleted: true as const };
  }
}

const who = (caller: Caller | null) => ({ account: caller?.account.id ?? null });
