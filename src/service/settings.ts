import { MAX_KEYS_PER_ACCOUNT, MIN_BALANCE_TO_CREATE_KEYS, newApiKey, newWebhookSecret, type ApiKey } from './core/accounts.js';
import { fail, ok, type Result } from './result.js';
import type { Caller, Service } from './service.js';

/** The most credits one top-up adds: a bound on what a typo can do to a test account. */
export const MAX_TOP_UP = 1_000_000;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A key as the settings list it: never its token nor its secret, only enough of the token to recognise it. */
function keyView(key: ApiKey) {
  return {
    id: key.id,
    object: 'api_key',
    key_hint: `${key.token.slice(0, 6)}…${key.token.slice(-4)}`,
    created_at: iso(key.createdAt),
    revoked_at: iso(key.revokedAt),
    default_asset_ids: key.defaultAssetIds,
  };
}

function ownKey(service: Service, caller: Caller, id: string): ApiKey | Result {
  const key = service.accounts.key(id);
  return key && key.accountId === caller.account.id && key.revokedAt === null ? key : fail('not_found', { detail: `No API key ${id}.` });
}

const isResult = (value: ApiKey | Result): value is Result => 'status' in value && 'body' in value;

/** POST /settings/top-up `{ "credits": N }`: adds bought credits (what the web UI's payment page does). */
export async function topUp(service: Service, caller: Caller, body: unknown): Promise<Result> {
  const credits = (body as { credits?: unknown } | null)?.credits;
  if (!(Number.isSafeInteger(credits) && (credits as number) >= 1 && (credits as number) <= MAX_TOP_UP)) {
    return fail('invalid_parameter', { detail: `credits is a whole number from 1 to ${MAX_TOP_UP}.` });
  }
  service.credits.topUp(caller.account, credits as number);
  await service.store.commit();
  return ok(200, { balance: caller.account.balance, topped_up: true, credits_added: credits });
}

/** GET /settings/keys: the account's live keys. */
export function listKeys(service: Service, caller: Caller): Result {
  const keys = service.accounts.keysOf(caller.account.id).filter((key) => key.revokedAt === null);
  return ok(200, { data: keys.map(keyView), max_keys: MAX_KEYS_PER_ACCOUNT });
}

/**
 * POST /settings/keys (spec 5.2 and 5.5): at most 5 live keys, and creating one needs a balance of 240
 * credits. The token and its webhook signing secret are shown once, here.
 */
export async function createKey(service: Service, caller: Caller): Promise<Result> {
  const live = service.accounts.keysOf(caller.account.id).filter((key) => key.revokedAt === null);
  if (live.length >= MAX_KEYS_PER_ACCOUNT) return fail('key_limit_reached', { detail: `An account has at most ${MAX_KEYS_PER_ACCOUNT} API keys; revoke one first.` });
  if (caller.account.balance < MIN_BALANCE_TO_CREATE_KEYS) {
    return service.insufficient(caller.account, MIN_BALANCE_TO_CREATE_KEYS, `Creating an API key needs a balance of at least ${MIN_BALANCE_TO_CREATE_KEYS} credits.`);
  }
  const key = service.accounts.addKey(caller.account, { token: newApiKey(), webhookSecret: newWebhookSecret() });
  await service.store.commit();
  return ok(201, { ...keyView(key), api_key: key.token, webhook_secret: key.webhookSecret });
}

/** DELETE /settings/keys/{id}: revoked at once; the next request with it is 401 invalid_api_key. */
export async function revokeKey(service: Service, caller: Caller, id: string): Promise<Result> {
  const key = ownKey(service, caller, id);
  if (isResult(key)) return key;
  service.accounts.revoke(key);
  await service.store.commit();
  return ok(200, { id: key.id, revoked: true });
}

/**
 * POST /settings/keys/{id}/rotate-secret (spec 5.5): a new webhook signing secret, shown once. Webhooks of
 * clips that end from now on are signed with it; deliveries already queued keep the secret they were
 * signed with, so their retries verify against the old one (keep both in the receiver's `secret` list
 * until they are done, about 3 hours).
 */
export async function rotateSecret(service: Service, caller: Caller, id: string): Promise<Result> {
  const key = ownKey(service, caller, id);
  if (isResult(key)) return key;
  service.accounts.update(key, { webhookSecret: newWebhookSecret() });
  await service.store.commit();
  return ok(200, { id: key.id, webhook_secret: key.webhookSecret });
}

/** PUT /settings/keys/{id}/default-assets `{ "asset_ids": [...] }`: photos for clips that name none (spec 4.1). */
export async function setDefaultAssets(service: Service, caller: Caller, id: string, body: unknown): Promise<Result> {
  const key = ownKey(service, caller, id);
  if (isResult(key)) return key;
  const ids = (body as { asset_ids?: unknown } | null)?.asset_ids;
  if (!Array.isArray(ids) || ids.some((value) => !Number.isSafeInteger(value) || value < 1)) {
    return fail('invalid_asset_id', { detail: 'asset_ids is an array of your asset ids ([] clears them).' });
  }
  if (ids.length > 5) return fail('too_many_images', { detail: 'At most 5 default assets.' });
  const bad = (ids as number[]).find((assetId) => !service.assets.get(caller.account.id, assetId));
  if (bad !== undefined) return fail('invalid_asset_id', { detail: `Asset ${bad} is not yours.` });
  service.accounts.update(key, { defaultAssetIds: ids as number[] });
  await service.store.commit();
  return ok(200, keyView(key));
}
