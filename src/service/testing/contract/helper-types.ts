// What the test helpers take and answer, as plain TypeScript types, so the published
// declarations name no zod. Each is exactly the `z.input` (a request) or `z.output` (an answer) of its schema
// in test-helpers.ts and seed.ts, and named as the OpenAPI document names that schema where it names one (the
// parts of a schema the document inlines — a fault rule's action, a seed's entries, a chaos mode — are named here);
// test/types/service-helpers.ts fails to compile (`npm run typecheck`) if one drifts from its schema.

/** A webhook chaos mode (docs/service.md "Webhook chaos"). */
export type WebhookChaosMode = 'webhook_duplicate' | 'webhook_concurrent' | 'webhook_cut' | 'webhook_late' | 'webhook_out_of_order' | 'webhook_previous_secret';

/** `GET /test_helpers/clock` and the answer of `advanceClock`: an account's simulated time, or the service's. */
export interface TestClock {
  object: 'test_clock';
  /** Whose time: the API key's account, or `null` for the service's own (the admin token). */
  account: number | null;
  /** ISO 8601. */
  now: string;
  /** How far this account's time is ahead of the service's (0 for the admin token). */
  ahead_seconds: number;
  frozen: boolean;
  pending_timers: number;
  advanced_seconds?: number | undefined;
}

/** What `advanceClock` takes (`POST /test_helpers/clock/advance`). */
export interface AdvanceClockRequest {
  /** Above 0, at most a year. */
  seconds: number;
  /** Only this account's time; without it, every account's. */
  account?: number | undefined;
}

/** What `accounts.create` takes (`POST /test_helpers/accounts`). */
export interface CreateTestAccountRequest {
  /** Starting credits, 0 to 100,000,000. @default the service's starting balance */
  balance?: number | undefined;
  /** 1-100 characters. @default `account_<id>` */
  name?: string | undefined;
}

/** A new account with its secrets, shown once: the answer of `accounts.create`. */
export interface TestAccount {
  id: number;
  name: string;
  api_key: string;
  webhook_secret: string;
  balance: number;
}

/** An account without its secrets, in `accounts.list()`. */
export interface TestAccountSummary {
  id: number;
  name: string;
  balance: number;
  /** The configured first account (the one `reset` brings back). */
  default: boolean;
  /** ISO 8601. */
  created_at: string;
}

/** The answer of `accounts.list()`, oldest first. */
export interface TestAccountList {
  data: TestAccountSummary[];
}

/** The answer of `accounts.remove(id)`. */
export interface DeletedTestAccount {
  id: number;
  deleted: true;
}

/** The answer of `reset()`. */
export interface ResetResponse {
  reset: true;
  /** The simulated time after the reset, ISO 8601. */
  now: string;
}

/** One request of the journal. */
export interface JournalEntry {
  /** When it was answered, on the account's simulated clock (ISO 8601). */
  at: string;
  account: number | null;
  /** The API key's id (`key_…`), never the key. */
  key_id: string | null;
  /** The operationId, or the assistant tool of a call to `/mcp`; `null` outside the contract. */
  operation: string | null;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  idempotency_key: string | null;
  replayed: boolean;
  status: number;
  /** The problem code of an error answer. */
  code: string | null;
  /** The request body, secrets redacted; cut to a string when long (then `truncated` is true). */
  body: unknown;
  /** Something of the entry (body, path, query, Idempotency-Key) was cut to its bound. */
  truncated: boolean;
}

/** The answer of `requests.list()`, newest first. */
export interface JournalList {
  data: JournalEntry[];
}

/** The answer of `requests.clear()`: how many entries went. */
export interface JournalCleared {
  deleted: number;
}

/** What `faults.add` takes (`POST /test_helpers/faults`). */
export interface CreateFaultRuleRequest {
  /** Which requests: `operation`, or `method` and/or `path`; and `account`. */
  match: {
    operation?: string | undefined;
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | undefined;
    path?: string | undefined;
    account?: number | undefined;
  };
  /** Exactly one of `problem`, `delay_ms`, `cut` and `hang`; `retry_after` goes with `problem`. */
  action: FaultRuleAction;
  times?: number | undefined;
  after?: number | undefined;
  probability?: number | undefined;
  seed?: number | undefined;
}

/** What a fault rule does to a matched request. */
export interface FaultRuleAction {
  problem?: string | undefined;
  retry_after?: number | undefined;
  delay_ms?: number | undefined;
  cut?: 'before' | 'after' | undefined;
  hang?: true | undefined;
}

/** A fault rule with its counts: the answer of `faults.add`, the items of `faults.list()`. */
export interface FaultRule {
  id: string;
  object: 'fault_rule';
  match: { operation: string | null; method: string | null; path: string | null; account: number | null };
  times: number | null;
  after: number;
  probability: number | null;
  seed: number;
  action: FaultRuleAction;
  /** Matching requests seen. */
  hits: number;
  /** Times the action was taken. */
  applied: number;
  /** Times left, or `null` without `times`. */
  remaining: number | null;
  /** ISO 8601. */
  created_at: string;
}

/** The answer of `faults.list()`, in the order rules are tried. */
export interface FaultRuleList {
  data: FaultRule[];
}

/** The answer of `faults.remove(id)`. */
export interface DeletedFaultRule {
  id: string;
  deleted: true;
}

/** What `webhookChaos` takes (`POST /test_helpers/webhook_chaos`). */
export interface WebhookChaosRequest {
  /** With the admin token: whose webhooks. */
  account?: number | undefined;
  /** The modes every webhook of the account gets from now on; `[]` turns them off. */
  modes: WebhookChaosMode[];
}

/** The answer of `webhookChaos`. */
export interface WebhookChaos {
  object: 'webhook_chaos';
  account: number;
  modes: WebhookChaosMode[];
}

/** An account a seed fixture makes. */
export interface SeedAccountEntry {
  name: string;
  balance?: number | undefined;
}

/** A trusted asset of a built-in sample photo. */
export interface SeedAssetEntry {
  name: string;
  /** The name of an account of the fixture, or `default`. */
  account: string;
  sample?: 'photo' | 'product' | undefined;
}

/** A clip in any state. */
export interface SeedClipEntry {
  name: string;
  account: string;
  status: 'pending' | 'generating' | 'done' | 'error' | 'cancelled';
  prompt?: string | null | undefined;
  /** A code of spec 2.9: required with status `error`. */
  error_code?: string | undefined;
  model?: string | null | undefined;
  duration?: number | undefined;
  ratio?: '16:9' | '9:16' | '1:1' | '4:3' | '3:4' | '21:9' | null | undefined;
  callback_url?: string | undefined;
}

/** An image job in any state. */
export interface SeedImageEntry {
  name: string;
  account: string;
  status: 'generating' | 'done' | 'partial' | 'failed';
  description?: string | undefined;
  type?: 'image' | 'character' | undefined;
  quality?: 'standard' | 'hd' | undefined;
  aspect_ratio?: '1:1' | '9:16' | '4:5' | '16:9' | '3:4' | undefined;
  count?: 1 | 4 | undefined;
  /** A code of spec 2.10: required with status `failed`. */
  error_code?: 'prompt_blocked' | 'document_blocked' | 'failed' | 'upload_blocked' | 'result_blocked' | 'copyright_blocked' | 'real_person_blocked' | 'busy' | 'timeout' | undefined;
}

/** A seed fixture as a test writes it: `seed()`, the `seed` option, `serve --seed` (docs/service.md). */
export interface SeedFixture {
  accounts?: SeedAccountEntry[] | undefined;
  assets?: SeedAssetEntry[] | undefined;
  clips?: SeedClipEntry[] | undefined;
  images?: SeedImageEntry[] | undefined;
}

/** The id of every entry a fixture made, by its name in the fixture: the answer of `seed()`, `seeded`. */
export interface SeedResult {
  accounts: Record<string, { id: number; api_key: string; webhook_secret: string }>;
  assets: Record<string, number>;
  clips: Record<string, number>;
  images: Record<string, number>;
}
