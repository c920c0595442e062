import { ServiceError } from '../../contract/problems.js';
import type { ChaosMode } from '../contract/test-helpers.js';
import type { Accounts } from '../../core/accounts.js';
import type { Caller } from '../../core/gate.js';
import { combineModes } from '../../testing/chaos.js';

/**
 * Webhook chaos per account: what `POST /test_helpers/webhook_chaos` does, without HTTP. An API
 * key sets its own account's modes; the admin token names the account. The modes replace the earlier ones
 * and apply to webhooks handed to the emitter from now on, besides each clip's prompt markers.
 */
export class WebhookChaosCommands {
  readonly #accounts: Accounts;

  constructor(accounts: Accounts) {
    this.#accounts = accounts;
  }

  set(caller: Caller | null, { account: named, modes }: { account?: number | undefined; modes: readonly ChaosMode[] }) {
    const id = caller ? caller.account.id : named;
    if (caller && named !== undefined && named !== caller.account.id) {
      throw new ServiceError('invalid_parameter', `An API key sets its own account’s modes (${caller.account.id}) only; use the admin token for account ${named}.`, { extra: { parameter: 'account' } });
    }
    if (id === undefined) throw new ServiceError('invalid_parameter', 'account is required with the admin token: whose webhooks get the modes.', { extra: { parameter: 'account' } });
    const account = this.#accounts.get(id);
    if (!account) throw new ServiceError('invalid_parameter', `No account ${id}.`, { extra: { parameter: 'account' } });
    const chosen = combineModes(modes);
    if (chosen.length > 0) account.webhookChaos = chosen;
    else delete account.webhookChaos;
    this.#accounts.save(account);
    return { object: 'webhook_chaos' as const, account: account.id, modes: chosen };
  }
}
