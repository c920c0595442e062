import { randomBytes } from 'node:crypto';
import type { ServiceStore, Table, TableIndex } from './store.js';
import { LIMITS } from '../contract/limits.js';

/** Spec 5.2-5.3 and 8. */
export const MAX_KEYS_PER_ACCOUNT = LIMITS.keysPerAccount;
export const MIN_BALANCE_FOR_KEYS = LIMITS.minBalanceForKeys;
export const MIN_BALANCE_TO_CREATE_KEYS = LIMITS.minBalanceToCreateKeys;

export interface Account {
  id: number;
  /** A label (the test helpers' accounts; seed fixtures name accounts by it). The first account's is `default`. */
  name?: string;
  balance: number;
  /** Whether the account has ever topped up (the assistant's daily limit depends on it, spec 5.7). */
  toppedUp: boolean;
  createdAt: number;
  /** API usage (spec 4.16). */
  usage: { requests: number; creditsSpent: number; creditsRefunded: number; videosCreated: number };
  /**
   * The webhook chaos modes of every clip of the account (`POST /test_helpers/webhook_chaos`); absent for none.
   * They are testing/contract's `ChaosMode` names: core keeps them, the test controls read them.
   */
  webhookChaos?: string[];
}

export interface ApiKey {
  /** `key_…`: names the key in /settings without showing it. */
  id: string;
  accountId: number;
  /** The bearer token, `sk_…`. The local service keeps it (the data file is private to its user) so start-up can print it. */
  token: string;
  /** The webhook signing secret of the tasks this key creates (spec 5.5), `whsec_…`. */
  webhookSecret: string;
  /**
   * The secret before the last rotation (for the `webhook_previous_secret` chaos mode); absent in older data
   * files and on a key never rotated.
   */
  previousWebhookSecret?: string;
  createdAt: number;
  revokedAt: number | null;
  /** Used when a clip names neither image_urls nor asset_ids (spec 4.1). */
  defaultAssetIds: number[];
}

export interface AccountTables {
  account: Account;
  key: ApiKey;
}

/** Why a bearer header was refused (spec 5.4). */
export type AuthRefusal = 'invalid_auth_header' | 'invalid_api_key';

export const newApiKey = (): string => `sk_${randomBytes(24).toString('base64url')}`;
export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString('base64url')}`;

/**
 * The shortest API key a user may choose: 24 characters, so a key typed by hand is not
 * one a guesser finds (generated keys are 35: `sk_` and 32 characters of 192 random bits).
 */
export const MIN_API_KEY_LENGTH = 24;

/** A token a user may choose (`--api-key`): 24-200 printable ASCII characters without spaces, as a bearer token must be. */
export function isValidToken(token: unknown): token is string {
  return typeof token === 'string' && token.length >= MIN_API_KEY_LENGTH && /^[\x21-\x7e]{1,200}$/.test(token);
}

/**
 * Where the accounts file each key's secrets, so the request journal can redact them: the journal's
 * `SecretIndex`, handed in by the composition root so that core imports nothing of testing/. Groups are
 * key ids, and `service` for the service's own secrets.
 */
export interface KeySecrets {
  set(group: string, secrets: Iterable<unknown>): void;
  delete(group: string): boolean;
  groups(): Iterable<string>;
}

/** Files nothing: accounts made without a journal to redact for (tests of core alone). */
const NO_SECRETS: KeySecrets = { set: () => undefined, delete: () => false, groups: () => [] };

/**
 * Accounts and their API keys: who a bearer token is, keys created, revoked and rotated from the
 * account settings (spec 5), all on the service store.
 */
export class Accounts {
  readonly #accounts: Table<Account>;
  readonly #keys: Table<ApiKey>;
  readonly #store: ServiceStore<AccountTables>;
  readonly #now: () => number;
  /** Every key's token and the webhook secrets it can still sign with, by key id, for the journal's redaction. */
  readonly secrets: KeySecrets;
  // Indexes of the key table, which keeps them in step (a rollback, an account deleted, a reset).
  /** Live keys by token (one key per token); revoked keys are filed under none. */
  readonly #byToken: TableIndex<ApiKey, string>;
  /** Every key (revoked ones too) by account, in the order made: `keysOf` is a lookup, not a scan of every key ever made. */
  readonly #byAccount: TableIndex<ApiKey, number>;
  /** The keys that sign with each webhook secret (current or previous), for `ofSecret`. */
  readonly #bySecret: TableIndex<ApiKey, string>;

  constructor(store: ServiceStore<AccountTables>, now: () => number, secrets: KeySecrets = NO_SECRETS) {
    this.#store = store;
    this.#accounts = store.table('account');
    this.#keys = store.table('key');
    this.#now = now;
    this.secrets = secrets;
    this.#byToken = this.#keys.index('token', (key) => (key.revokedAt === null ? key.token : undefined), { unique: true });
    this.#byAccount = this.#keys.index('accountId', (key) => key.accountId);
    this.#bySecret = this.#keys.index('signingSecret', (key) => [key.webhookSecret, key.previousWebhookSecret]);
    // A revoked key's secrets stay: its clips' webhooks are still signed with its webhook secret.
    this.#keys.watch('secrets', (id, key) => (key ? secrets.set(String(id), [key.token, key.webhookSecret, key.previousWebhookSecret]) : secrets.delete(String(id))));
    for (const key of this.#keys.values()) secrets.set(key.id, [key.token, key.webhookSecret, key.previousWebhookSecret]);
  }

  get(id: number): Account | undefined {
    return this.#accounts.get(id);
  }

  /** The first account, if any: the one `cliphook serve` prints at start-up. */
  first(): { account: Account; key: ApiKey } | undefined {
    return this.withLiveKey(1);
  }

  /** An account with its oldest live key, what acts for it where no key was given; `undefined` without one. */
  withLiveKey(accountId: number): { account: Account; key: ApiKey } | undefined {
    const account = this.#accounts.get(accountId);
    const key = account && this.keysOf(accountId).find((candidate) => candidate.revokedAt === null);
    return account && key ? { account, key } : undefined;
  }

  /** Creates an account with one key. */
  create({ balance, name, token = newApiKey(), webhookSecret = newWebhookSecret() }: { balance: number; name?: string; token?: string; webhookSecret?: string }): { account: Account; key: ApiKey } {
    if (this.#byToken.has(token)) throw new TypeError('That API key is already in use.');
    const id = this.#store.nextId('account');
    const account = this.#accounts.put({
      id,
      name: name ?? (id === 1 ? 'default' : `account_${id}`),
      balance,
      toppedUp: false,
      createdAt: this.#now(),
      usage: { requests: 0, creditsSpent: 0, creditsRefunded: 0, videosCreated: 0 },
    });
    return { account, key: this.addKey(account, { token, webhookSecret }) };
  }

  /** Adds a key to an account (the caller checks the limits). */
  addKey(account: Account, { token = newApiKey(), webhookSecret = newWebhookSecret() }: { token?: string; webhookSecret?: string } = {}): ApiKey {
    const key = this.#keys.put({
      id: `key_${randomBytes(9).toString('base64url')}`,
      accountId: account.id,
      token,
      webhookSecret,
      createdAt: this.#now(),
      revokedAt: null,
      defaultAssetIds: [],
    });
    return key;
  }

  /** Replaces a key's token or secret in place (start-up flags that pin them). */
  update(key: ApiKey, change: Partial<Pick<ApiKey, 'token' | 'webhookSecret' | 'defaultAssetIds'>>): ApiKey {
    if (change.token !== undefined && change.token !== key.token) {
      if (this.#byToken.has(change.token)) throw new TypeError('That API key is already in use.');
      key.token = change.token;
    }
    if (change.webhookSecret !== undefined) key.webhookSecret = change.webhookSecret;
    if (change.defaultAssetIds !== undefined) key.defaultAssetIds = [...change.defaultAssetIds];
    return this.#keys.put(key);
  }

  /** Revokes a key: it answers 401 invalid_api_key from the next request on. */
  revoke(key: ApiKey): void {
    if (key.revokedAt !== null) return;
    key.revokedAt = this.#now();
    this.#keys.put(key);
  }

  /** Every account, oldest first. */
  all(): Account[] {
    return [...this.#accounts.values()].sort((a, b) => a.id - b.id);
  }

  /**
   * Deletes an account and its keys (`DELETE /test_helpers/accounts/{id}`): its keys answer 401
   * invalid_api_key from the next request on.
   */
  remove(accountId: number): boolean {
    for (const key of this.keysOf(accountId)) this.#keys.remove(key.id);
    return this.#accounts.remove(accountId);
  }

  /** The account's keys, revoked ones too, in the order made: one index lookup, not a scan of every key. */
  keysOf(accountId: number): ApiKey[] {
    return this.#byAccount.get(accountId);
  }

  key(id: string): ApiKey | undefined {
    return this.#keys.get(id);
  }

  /**
   * Who an `Authorization` header is (spec 5.4): the key and its account, or why not. The scheme is
   * case-insensitive (RFC 9110 §11.1); the token is compared as sent.
   */
  authenticate(header: string | undefined): { account: Account; key: ApiKey } | AuthRefusal {
    const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(header ?? '');
    if (!match) return 'invalid_auth_header';
    const key = this.#byToken.first(match[1]!);
    const account = key && this.#accounts.get(key.accountId);
    return key && account ? { account, key } : 'invalid_api_key';
  }

  /** The account whose key signs webhooks with `secret` (its current secret, or the one before its last rotation): one lookup. */
  ofSecret(secret: string): number | undefined {
    return this.#bySecret.first(secret)?.accountId;
  }

  /** Saves a changed account. */
  save(account: Account): Account {
    return this.#accounts.put(account);
  }
}
