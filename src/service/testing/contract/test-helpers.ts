import { z } from 'zod';
import { ASSISTANT_TOOL_NAMES, OPERATION_NAME_PATTERN } from '../../contract/assistant.js';
import { pathId, queryEnum, queryInteger, Timestamp } from '../../contract/common.js';
import { cross, rule } from '../../contract/problems.js';
import { CHAOS_MODES } from './chaos-modes.js';

export { CHAOS_MODES, type ChaosMode } from './chaos-modes.js';

// The test helpers: what a user's tests call to control the service — Stripe's test clocks,
// accounts on demand, reset, the request journal, fault rules and webhook chaos. The seed fixture is in
// seed.ts. Every refusal has a code: the spec names none for these, so it is invalid_parameter (or
// not_found for an unknown id), as for the query parameters of /v1.

/** The longest single advance: a year, far beyond every time rule of the spec (7-day links, 30-day characters). */
export const MAX_ADVANCE_SECONDS = 366 * 24 * 60 * 60;

/** GET /test_helpers/clock: the simulated time of the caller's account (an API key), or the service's (the admin token). */
export const Clock = z
  .object({
    object: z.literal('test_clock'),
    account: z.int().nullable().meta({ description: 'Whose time: the API key’s account, or null for the service’s own (the admin token), which every account’s time is at least.' }),
    now: Timestamp,
    ahead_seconds: z.number().meta({ description: 'How far this account’s time is ahead of the service’s (0 for the admin token).' }),
    frozen: z.boolean(),
    pending_timers: z.int(),
    advanced_seconds: z.number().optional(),
  })
  .meta({ id: 'TestClock' });

/** POST /test_helpers/clock/advance. */
export const AdvanceRequest = z
  .object({
    seconds: rule(z.number().gt(0).max(MAX_ADVANCE_SECONDS), { code: 'invalid_parameter', detail: () => `seconds is a number above 0 and at most ${MAX_ADVANCE_SECONDS}.` }),
    account: rule(z.int().min(1), { code: 'invalid_parameter', detail: () => 'account is an account id.' })
      .optional()
      .meta({ description: 'With the admin token: move only this account’s time (without it, every account’s). An API key moves its own account’s.' }),
  })
  .meta({ id: 'AdvanceClockRequest' });

// Accounts on demand.

/** The most credits a test account starts with: a bound on what a typo can do. */
export const MAX_TEST_BALANCE = 100_000_000;
/** The longest account name (also in seed fixtures). */
export const MAX_ACCOUNT_NAME = 100;

/** A whole number of credits a test account starts with. */
export const TestBalance = rule(z.int().min(0).max(MAX_TEST_BALANCE), { code: 'invalid_parameter', detail: ({ where }) => `${where} is a whole number of credits from 0 to ${MAX_TEST_BALANCE}.` });

/** POST /test_helpers/accounts. */
export const CreateTestAccountRequest = z
  .object({
    balance: TestBalance.optional().meta({ description: 'Starting credits; default the service’s starting balance (1000 unless `--balance`).' }),
    name: rule(z.string().min(1).max(MAX_ACCOUNT_NAME), { code: 'invalid_parameter', detail: () => `name is 1-${MAX_ACCOUNT_NAME} characters.` }).optional().meta({ description: 'A label for the account; default `account_<id>`.' }),
  })
  .meta({ id: 'CreateTestAccountRequest' });

/** 201 of POST /test_helpers/accounts: the account with its secrets, shown once. */
export const TestAccount = z
  .object({
    id: z.int(),
    name: z.string(),
    api_key: z.string().meta({ description: 'Shown once, here.' }),
    webhook_secret: z.string().meta({ description: 'Signs the webhooks of the clips this key creates (spec 6). Shown once, here.' }),
    balance: z.int(),
  })
  .meta({ id: 'TestAccount' });

/** An account in GET /test_helpers/accounts. */
export const TestAccountSummary = z
  .object({
    id: z.int(),
    name: z.string(),
    balance: z.int(),
    default: z.boolean().meta({ description: 'The configured first account (the one `reset` brings back).' }),
    created_at: Timestamp,
  })
  .meta({ id: 'TestAccountSummary', description: 'An account without its secrets.' });
/** GET /test_helpers/accounts, oldest first. */
export const TestAccountList = z.object({ data: z.array(TestAccountSummary) }).meta({ id: 'TestAccountList' });
/** DELETE /test_helpers/accounts/{id}: an unknown id is 404, as a malformed one. */
export const TestAccountPath = z.object({ id: pathId('account') });
/** 200 of DELETE /test_helpers/accounts/{id}. */
export const DeletedTestAccount = z.object({ id: z.int(), deleted: z.literal(true) }).meta({ id: 'DeletedTestAccount' });

/** 200 of POST /test_helpers/reset. */
export const ResetResponse = z
  .object({ reset: z.literal(true), now: Timestamp.meta({ description: 'The simulated time after the reset (the clock’s offset is gone).' }) })
  .meta({ id: 'ResetResponse' });

// The request journal.

/** Entries the journal keeps (newest kept, oldest dropped). */
export const JOURNAL_CAP = 1000;
/**
 * The most fault rules of one account, and of the service-wide ones, so rules kept stay bounded (testing/faults.ts
 * re-exports it).
 */
export const MAX_FAULT_RULES = 100;
/** The longest journal `path` filter taken, so a filter's cost is bounded (testing/journal-filter.ts re-exports it). */
export const MAX_PATH_FILTER_CHARS = 2048;
/** The most `/`-separated segments of a journal `path` filter (the document's paths have at most 5). */
export const MAX_PATH_FILTER_SEGMENTS = 32;
/** The methods a journal entry may have (the `method` filter). */
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
/** A path (`/v1/videos/7`) or a path template of the document (`/v1/videos/{id}`). */
// Built from a constant of this module, never from input.
const PATH_PATTERN = new RegExp(`^\\/[\\x21-\\x7e]{0,${MAX_PATH_FILTER_CHARS - 1}}$`);

/** GET /test_helpers/requests: every filter given must match; newest first, `limit` of them. */
export const JournalQuery = z.object({
  method: queryEnum('method', HTTP_METHODS),
  path: rule(z.string().regex(PATH_PATTERN), { code: 'invalid_parameter', detail: () => `path is a path (/v1/videos/7) or a path template (/v1/videos/{id}), at most ${MAX_PATH_FILTER_CHARS} characters.` })
    // The bounds the journal enforces (journal-filter.ts), stated where a client reads them.
    .optional().meta({ description: `A path (/v1/videos/7) or a path template of this document (/v1/videos/{id}), matched segment by segment; at most ${MAX_PATH_FILTER_CHARS} characters and ${MAX_PATH_FILTER_SEGMENTS} segments.` }),
  operation: rule(z.string().regex(OPERATION_NAME_PATTERN), { code: 'invalid_parameter', detail: () => 'operation is an operationId of this document (getVideo) or an assistant tool (create_clip).' })
    .optional().meta({ description: `An operationId of this document (getVideo), or the name of an assistant tool of /mcp (${ASSISTANT_TOOL_NAMES.join(', ')}).` }),
  status: rule(z.string().regex(/^[1-5](?:\d\d|xx)$/), { code: 'invalid_parameter', detail: () => 'status is an HTTP status (404) or a class (4xx).' })
    .optional().meta({ description: 'An HTTP status (404) or a class (4xx).' }),
  account: queryInteger('account', { min: 1 }),
  limit: queryInteger('limit', { min: 1, max: JOURNAL_CAP, fallback: 100 }),
});
/** DELETE /test_helpers/requests: one account's entries (the admin's choice; a key's are its own), or all. */
export const JournalClearQuery = z.object({ account: queryInteger('account', { min: 1 }) });

/** One request of the journal (testing/journal.ts). */
export const JournalEntry = z
  .object({
    at: Timestamp.meta({ description: 'When it was answered, on the account’s simulated clock.' }),
    account: z.int().nullable(),
    key_id: z.string().nullable().meta({ description: 'The API key’s id (key_…), never the key.' }),
    operation: z.string().nullable().meta({ description: 'The operationId, the assistant tool of a call to /mcp (create_clip: method POST, path /mcp, the arguments as body), or null outside the contract.' }),
    method: z.string(),
    path: z.string(),
    query: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
    idempotency_key: z.string().nullable(),
    replayed: z.boolean().meta({ description: 'Answered from the stored answer of its Idempotency-Key.' }),
    status: z.int(),
    code: z.string().nullable().meta({ description: 'The problem code of an error answer.' }),
    body: z.unknown().meta({ description: 'The request body, secrets redacted; cut to a string when long (then truncated is true).' }),
    truncated: z.boolean().meta({ description: 'Something of the entry (body, path, query, Idempotency-Key) was cut to its bound.' }),
  })
  .meta({ id: 'JournalEntry' });
/** 200 of GET /test_helpers/requests. */
export const JournalList = z.object({ data: z.array(JournalEntry) }).meta({ id: 'JournalList' });
/** 200 of DELETE /test_helpers/requests: how many entries went. */
export const JournalCleared = z.object({ deleted: z.int() }).meta({ id: 'JournalCleared' });

// Fault rules.

/** The longest `delay_ms` (real time: what a client's time-out sees). */
export const MAX_FAULT_DELAY_MS = 120_000;
/** The most `times` and `after` count. */
export const MAX_FAULT_COUNT = 1_000_000;
const FAULT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const count = (name: string, min: number) => rule(z.int().min(min).max(MAX_FAULT_COUNT), { code: 'invalid_parameter', detail: () => `${name} is a whole number from ${min} to ${MAX_FAULT_COUNT}.` });

// The names a rule may give are closed lists made from the routes, which are made from this module: the
// schemas take their shape here, `faultRuleNames` (testing/fault-check.ts) lists them, and the document
// writes them as enums (contract/openapi.ts).

/** A fault rule's `match.operation`: an operationId of the document or an assistant tool. */
export const FaultMatchOperation = rule(z.string().regex(OPERATION_NAME_PATTERN), { code: 'invalid_parameter', detail: () => 'match.operation is an operationId of this document (getVideo) or an assistant tool (create_clip).' });
/** A fault rule's `match.path`: a path template of the document. */
export const FaultMatchPath = rule(z.string().regex(/^\/[A-Za-z0-9_{}./-]{0,255}$/), { code: 'invalid_parameter', detail: () => 'match.path is a path template of this document (/v1/videos/{id}).' });
/** A fault rule's `action.problem`: a code of spec section 7. */
export const FaultActionProblem = rule(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/), { code: 'invalid_parameter', detail: () => 'action.problem is a code of spec section 7.' });

/** Which requests a fault rule matches (checked against the routes by testing/faults.ts). */
export const FaultMatch = z
  .object({
    operation: FaultMatchOperation
      .optional().meta({ description: `An operationId of this document, or the name of an assistant tool of /mcp (${ASSISTANT_TOOL_NAMES.join(', ')}): its calls get the action, a problem as the tool's refusal. Not with method or path.` }),
    method: rule(z.enum(FAULT_METHODS), { code: 'invalid_parameter', allowed: FAULT_METHODS }).optional(),
    path: FaultMatchPath
      .optional().meta({ description: 'A path template of this document (/v1/videos/{id}).' }),
    account: rule(z.int().min(1), { code: 'invalid_parameter', detail: () => 'match.account is an account id.' }).optional().meta({ description: 'Only this account’s requests. An API key’s rules are its own account’s.' }),
  })
  .superRefine((match, ctx) => {
    if (match.operation !== undefined && (match.method !== undefined || match.path !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['operation'], message: 'match takes operation, or method and/or path: not both.', params: cross('invalid_parameter', { parameter: 'match.operation' }) });
    }
  })
  // The superRefine's rule as JSON Schema too, so a validator of the document enforces it.
  .meta({
    description: 'Which requests: operation, or method and/or path; and account. Test helper routes cannot be matched.',
    dependentSchemas: { operation: { properties: { method: false, path: false } } },
  });

/** What a fault rule does to a matched request. */
export const FaultAction = z
  .object({
    problem: FaultActionProblem
      .optional().meta({ description: 'Answer this problem (a code of spec section 7 that every matched route can answer), exactly as the service would; nothing is done.' }),
    retry_after: rule(z.int().min(0).max(86_400), { code: 'invalid_parameter', detail: () => 'action.retry_after is whole seconds from 0 to 86400.' })
      .optional().meta({ description: 'With a retryable problem: the Retry-After to send instead of the service’s own.' }),
    delay_ms: rule(z.int().min(1).max(MAX_FAULT_DELAY_MS), { code: 'invalid_parameter', detail: () => `action.delay_ms is whole milliseconds from 1 to ${MAX_FAULT_DELAY_MS}.` })
      .optional().meta({ description: 'Answer normally, this many real milliseconds late.' }),
    cut: rule(z.enum(['before', 'after']), { code: 'invalid_parameter', allowed: ['before', 'after'] })
      .optional().meta({ description: 'Drop the connection without an answer: before the operation runs, or after it took effect.' }),
    hang: rule(z.literal(true), { code: 'invalid_parameter', detail: () => 'action.hang is true.' }).optional().meta({ description: 'Never answer; the client gives up.' }),
  })
  .superRefine((action, ctx) => {
    const given = (['problem', 'delay_ms', 'cut', 'hang'] as const).filter((name) => action[name] !== undefined);
    if (given.length !== 1) {
      const message = given.length === 0 ? 'action is one of {problem}, {delay_ms}, {cut}, {hang: true}.' : `action takes one of problem, delay_ms, cut and hang; got ${given.join(' and ')}.`;
      ctx.addIssue({ code: 'custom', path: given.length === 0 ? [] : [given[1]!], message, params: cross('invalid_parameter', { parameter: 'action' }) });
    } else if (action.retry_after !== undefined && action.problem === undefined) {
      ctx.addIssue({ code: 'custom', path: ['retry_after'], message: 'action.retry_after goes with action.problem.', params: cross('invalid_parameter', { parameter: 'action.retry_after' }) });
    }
  })
  // Exactly one action, and retry_after with problem, as JSON Schema too.
  .meta({
    description: 'Exactly one of problem, delay_ms, cut and hang.',
    oneOf: (['problem', 'delay_ms', 'cut', 'hang'] as const).map((name) => ({ required: [name] })),
    dependentRequired: { retry_after: ['problem'] },
  });

/** POST /test_helpers/faults. */
export const FaultRuleRequest = z
  .object({
    match: FaultMatch,
    times: count('times', 1).optional().meta({ description: 'Act this many times, then stop; default every time.' }),
    after: count('after', 0).optional().meta({ description: 'Let this many matching requests through first; default 0.' }),
    probability: rule(z.number().gt(0).max(1), { code: 'invalid_parameter', detail: () => 'probability is a number above 0 and at most 1.' })
      .optional().meta({ description: 'Act on this share of the matching requests, drawn from the rule’s seeded generator; default 1.' }),
    seed: rule(z.int().min(0).max(2 ** 32 - 1), { code: 'invalid_parameter', detail: () => 'seed is a whole number from 0 to 4294967295.' })
      .optional().meta({ description: 'Seeds the probability draws: the same seed draws the same sequence. Default the rule’s number.' }),
    action: FaultAction,
  })
  .meta({ id: 'CreateFaultRuleRequest' });
/** A fault rule as the contract parses it: what `FaultRules.add` takes. */
export type FaultRuleInput = z.output<typeof FaultRuleRequest>;

/** A fault rule with its counts (201 of POST, items of GET /test_helpers/faults). */
export const FaultRule = z
  .object({
    id: z.string(),
    object: z.literal('fault_rule'),
    match: z.object({ operation: z.string().nullable(), method: z.string().nullable(), path: z.string().nullable(), account: z.int().nullable() }),
    times: z.int().nullable(),
    after: z.int(),
    probability: z.number().nullable(),
    seed: z.int(),
    action: z.object({ problem: z.string().optional(), retry_after: z.int().optional(), delay_ms: z.int().optional(), cut: z.enum(['before', 'after']).optional(), hang: z.literal(true).optional() }),
    hits: z.int().meta({ description: 'Matching requests seen.' }),
    applied: z.int().meta({ description: 'Times the action was taken.' }),
    remaining: z.int().nullable().meta({ description: 'Times left, or null without `times`.' }),
    created_at: Timestamp,
  })
  .meta({ id: 'FaultRule' });
/** 200 of GET /test_helpers/faults, in the order rules are tried. */
export const FaultRuleList = z.object({ data: z.array(FaultRule) }).meta({ id: 'FaultRuleList' });
/** GET /test_helpers/faults: the admin may ask for one account's rules; a key sees its own. */
export const FaultListQuery = z.object({ account: queryInteger('account', { min: 1 }) });
/** DELETE /test_helpers/faults/{id}: `flt_<n>`; anything else is 404. */
export const FaultPath = z.object({ id: rule(z.string().regex(/^flt_[A-Za-z0-9]{1,32}$/), { code: 'not_found', detail: ({ value }) => `No fault rule ${String(value)}.` }) });
/** 200 of DELETE /test_helpers/faults/{id}. */
export const DeletedFaultRule = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'DeletedFaultRule' });

// Webhook chaos.


/** POST /test_helpers/webhook_chaos: the modes of an account's webhooks, replacing the earlier ones. */
export const WebhookChaosRequest = z
  .object({
    account: rule(z.int().min(1), { code: 'invalid_parameter', detail: () => 'account is an account id.' }).optional().meta({ description: 'With the admin token: whose webhooks. An API key sets its own account’s.' }),
    modes: rule(z.array(z.enum(CHAOS_MODES)).max(CHAOS_MODES.length), {
      code: 'invalid_parameter',
      allowed: CHAOS_MODES,
      detail: ({ where, value, issue }) =>
        value === undefined ? 'modes is required: an array of modes ([] turns them off).' : issue.code === 'too_big' ? `modes names each of the ${CHAOS_MODES.length} modes once at most.` : `${where}: must be one of ${CHAOS_MODES.join(', ')}.`,
    })
      .meta({ description: 'The modes every webhook of the account gets from now on, besides its clip’s markers; [] turns them off.' }),
  })
  .meta({ id: 'WebhookChaosRequest' });
/** 200 of POST /test_helpers/webhook_chaos. */
export const WebhookChaos = z.object({ object: z.literal('webhook_chaos'), account: z.int(), modes: z.array(z.enum(CHAOS_MODES)) }).meta({ id: 'WebhookChaos' });
