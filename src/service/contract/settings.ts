import { z } from 'zod';
import { Timestamp } from './common.js';
import { rule } from './problems.js';

// The account settings that the spec puts in the web UI (spec 5.2-5.5 and 5.7), served at /settings so a
// test can do what a person does there: top up, manage keys and their default assets, and the assistants.

/**
 * The top-up page (`GET`; `POST` with a bearer key and JSON is the `topUp` route): the URL of spec 7's
 * `user_action: { kind: 'top_up', url }` and of the assistant's `get_topup_link`, named once so they agree.
 */
export const TOP_UP_PAGE_PATH = '/settings/top-up';

/** The top-up page at the service's `origin`: every 402's `user_action.url` and `get_topup_link`'s `url`. */
export const topUpUrl = (origin: string): string => `${origin}${TOP_UP_PAGE_PATH}`;

/** The most credits one top-up adds: a bound on what a typo can do to a test account. */
export const MAX_TOP_UP = 1_000_000;
/** Spec 5.7: an assistant's daily limit, 0 to 100,000 credits (ours), or null for the default (30; 10 before the first top-up). */
export const MAX_DAILY_LIMIT = 100_000;
export const MAX_DEFAULT_ASSETS = 5;

export const TopUpRequest = z
  .object({
    credits: rule(z.int().min(1).max(MAX_TOP_UP), { code: 'invalid_parameter', detail: () => `credits is a whole number from 1 to ${MAX_TOP_UP}.` }),
  })
  .meta({ id: 'TopUpRequest' });
export const TopUpResponse = z.object({ balance: z.int(), topped_up: z.literal(true), credits_added: z.int() }).meta({ id: 'TopUpResponse' });

export const KeyPath = z.object({ id: rule(z.string().regex(/^key_[A-Za-z0-9_-]{1,32}$/), { code: 'not_found', detail: ({ value }) => `No API key ${String(value)}.` }) });

/** A key as the settings list it: never its token nor its secret. */
export const ApiKeyView = z
  .object({
    id: z.string(),
    object: z.literal('api_key'),
    key_hint: z.string(),
    created_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
    default_asset_ids: z.array(z.int()),
  })
  .meta({ id: 'ApiKey' });
export const ApiKeyList = z.object({ data: z.array(ApiKeyView), max_keys: z.int() }).meta({ id: 'ApiKeyList' });
/** 201 of POST /settings/keys: the token and its webhook secret, shown once (spec 5.5). */
export const CreatedApiKey = ApiKeyView.extend({ api_key: z.string(), webhook_secret: z.string() }).meta({ id: 'CreatedApiKey' });
export const RevokedApiKey = z.object({ id: z.string(), revoked: z.literal(true) }).meta({ id: 'RevokedApiKey' });
export const RotatedSecret = z.object({ id: z.string(), webhook_secret: z.string() }).meta({ id: 'RotatedSecret' });

export const DefaultAssetsRequest = z
  .object({
    asset_ids: rule(z.array(z.int().min(1)).max(MAX_DEFAULT_ASSETS), {
      code: 'invalid_asset_id',
      when: { too_big: 'too_many_images' },
      detail: ({ issue }) => (issue.code === 'too_big' ? `At most ${MAX_DEFAULT_ASSETS} default assets.` : 'asset_ids is an array of your asset ids ([] clears them).'),
    }),
  })
  .meta({ id: 'DefaultAssetsRequest' });

export const AssistantPath = z.object({ id: rule(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/), { code: 'not_found', detail: ({ value }) => `No assistant ${String(value)}.` }) });

export const AssistantView = z
  .object({
    id: z.string(),
    object: z.literal('assistant'),
    kind: z.enum(['api_key', 'oauth']),
    name: z.string().nullable(),
    client_id: z.string().nullable(),
    key_id: z.string().nullable(),
    daily_limit: z.int(),
    daily_limit_is_default: z.boolean(),
    used_today: z.int(),
    remaining_today: z.int(),
    running_clips: z.int(),
    connected_at: Timestamp.nullable(),
    disconnected_at: Timestamp.nullable(),
    as_of: Timestamp.nullable(),
  })
  .meta({ id: 'Assistant' });
export const AssistantList = z.object({ object: z.literal('list'), data: z.array(AssistantView) }).meta({ id: 'AssistantList' });
export const DailyLimitRequest = z
  .object({
    daily_limit: rule(z.int().min(0).max(MAX_DAILY_LIMIT).nullable(), { code: 'invalid_parameter', detail: () => `daily_limit is a whole number of credits from 0 to ${MAX_DAILY_LIMIT}, or null for the default.` }),
  })
  .meta({ id: 'DailyLimitRequest' });
export const DisconnectedAssistant = z.object({ id: z.string(), object: z.literal('assistant'), disconnected: z.literal(true), disconnected_at: Timestamp.nullable() }).meta({ id: 'DisconnectedAssistant' });
