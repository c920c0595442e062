import { MAX_DEFAULT_ASSETS } from '../../contract/settings.js';
import { ServiceError } from '../../contract/problems.js';
import { MAX_KEYS_PER_ACCOUNT, MIN_BALANCE_TO_CREATE_KEYS, newApiKey, newWebhookSecret, type Accounts, type ApiKey } from '../../core/accounts.js';
import type { Credits } from '../../core/credits.js';
import { insufficient, type Caller } from '../../core/gate.js';
import type { Assets } from '../assets/assets.js';
import { VideoLifecycle, type Video } from '../videos/lifecycle.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export interface AccountCommandsOptions {
  accounts: Accounts;
  credits: Credits;
  assets: Assets;
  /** The account's clips, for its usage (spec 4.16). */
  videosOf: (accountId: number) => Iterable<Video>;
}

/**
 * GET /account (spec 4.16) and the account settings the spec puts in the web UI (5.2-5.5): top-ups, API
 * keys, their webhook secrets and their default assets. Keys are listed without their token or secret,
 * which are shown once, when made.
 */
export class AccountCommands {
  readonly #options: AccountCommandsOptions;

  constructor(options: AccountCommandsOptions) {
    this.#options = options;
  }

  /** GET /account: balance and API usage (spec 2.8: fields not shown; these are ours, documented). */
  view(caller: Caller) {
    const { account } = caller;
    const videos = [...this.#options.videosOf(account.id)];
    return {
      id: account.id,
      object: 'account' as const,
      balance: account.balance,
      currency: 'credits' as const,
      topped_up: account.toppedUp,
      keys: this.#live(account.id).length,
      api_usage: {
        requests: account.usage.requests,
        credits_spent: account.usage.creditsSpent,
        credits_refunded: account.usage.creditsRefunded,
        videos_created: account.usage.videosCreated,
        videos_in_progress: videos.filter((video) => video.status === 'pending' || video.status === 'generating').length,
        credits_used: videos.reduce((sum, video) => sum + VideoLifecycle.creditsUsed(video), 0),
      },
    };
  }

  /** POST /settings/top-up `{ credits }`: adds bought credits (what the web UI's payment page does). */
  topUp(caller: Caller, credits: number) {
    this.#options.credits.topUp(caller.account, credits);
    return { balance: caller.account.balance, topped_up: true as const, credits_added: credits };
  }

  /** GET /settings/keys: the account's live keys. */
  keys(caller: Caller) {
    return { data: this.#live(caller.account.id).map(keyView), max_keys: MAX_KEYS_PER_ACCOUNT };
  }

  /** POST /settings/keys (spec 5.2, 5.5): at most 5 live keys; a balance of 240 to make one. The token and secret are shown once. */
  createKey(caller: Caller) {
    if (this.#live(caller.account.id).length >= MAX_KEYS_PER_ACCOUNT) throw new ServiceError('key_limit_reached', `An account has at most ${MAX_KEYS_PER_ACCOUNT} API keys; revoke one first.`);
    if (caller.account.balance < MIN_BALANCE_TO_CREATE_KEYS) throw insufficient(caller.account, MIN_BALANCE_TO_CREATE_KEYS, `Creating an API key needs a balance of at least ${MIN_BALANCE_TO_CREATE_KEYS} credits.`);
    const key = this.#options.accounts.addKey(caller.account, { token: newApiKey(), webhookSecret: newWebhookSecret() });
    return { ...keyView(key), api_key: key.token, webhook_secret: key.webhookSecret };
  }

  /** DELETE /settings/keys/{id}: revoked at once; the next request with it is 401 invalid_api_key. */
  revokeKey(caller: Caller, id: string) {
    const key = this.#ownKey(caller, id);
    this.#options.accounts.revoke(key);
    return { id: key.id, revoked: true as const };
  }

  /**
   * POST /settings/keys/{id}/rotate-secret (spec 5.5): a new webhook signing secret, shown once. Webhooks of
   * clips that end from now on are signed with it; deliveries already queued keep the secret they were
   * signed with, so their retries verify against the old one.
   */
  rotateSecret(caller: Caller, id: string) {
    const key = this.#ownKey(caller, id);
    // The secret it replaces is kept, so webhook chaos can sign with it (`webhook_previous_secret`).
    key.previousWebhookSecret = key.webhookSecret;
    this.#options.accounts.update(key, { webhookSecret: newWebhookSecret() });
    return { id: key.id, webhook_secret: key.webhookSecret };
  }

  /** PUT /settings/keys/{id}/default-assets `{ asset_ids }`: photos for clips that name none (spec 4.1). */
  setDefaultAssets(caller: Caller, id: string, assetIds: number[]) {
    const key = this.#ownKey(caller, id);
    if (assetIds.length > MAX_DEFAULT_ASSETS) throw new ServiceError('too_many_images', `At most ${MAX_DEFAULT_ASSETS} default assets.`);
    const bad = assetIds.find((assetId) => !this.#options.assets.get(caller.account.id, assetId));
    if (bad !== undefined) throw new ServiceError('invalid_asset_id', `Asset ${bad} is not yours.`);
    this.#options.accounts.update(key, { defaultAssetIds: assetIds });
    return keyView(key);
  }

  #live(accountId: number): ApiKey[] {
    return this.#options.accounts.keysOf(accountId).filter((key) => key.revokedAt === null);
  }

  #ownKey(caller: Caller, id: string): ApiKey {
    const key = this.#options.accounts.key(id);
    if (!key || key.accountId !== caller.account.id || key.revokedAt !== null) throw new ServiceError('not_found', `No API key ${id}.`);
    return key;
  }
}

/** A key as the settings list it: never its token nor its secret, only enough of the token to recognise it. */
function keyView(key: ApiKey) {
  return {
    id: key.id,
    object: 'api_key' as const,
    key_hint: `${key.token.slice(0, 6)}…${key.token.slice(-4)}`,
    created_at: iso(key.createdAt),
    revoked_at: iso(key.revokedAt),
    default_asset_ids: key.defaultAssetIds,
  };
}
