import type {
  AdvanceClockRequest, CreateFaultRuleRequest, CreateTestAccountRequest, DeletedFaultRule, DeletedTestAccount, FaultRule, FaultRuleList, JournalCleared, JournalList, ResetResponse, SeedFixture, SeedResult,
  TestAccount, TestAccountList, TestClock, WebhookChaos, WebhookChaosRequest,
} from '../contract/helper-types.js';

// Typed by the plain types of helper-types.ts (each exactly its schema's), so the
// published declarations name no zod.

/** A filter of the request journal, as `GET /test_helpers/requests` takes it (numbers or strings). */
export interface JournalFilter {
  method?: string;
  path?: string;
  operation?: string;
  status?: number | string;
  account?: number | string;
  limit?: number | string;
}

/**
 * The test helpers on the `startService` handle: what the admin token reaches over HTTP, in
 * process. Each call checks its input by the contract, as the route does (a `ServiceError` with the route's
 * code for bad input: `invalid_parameter`, the seed's `pointer`), runs the same command in one unit of
 * work, and resolves with the body the route answers.
 * @example
 * const svc = await startService();
 * const { api_key } = await svc.accounts.create({ balance: 300 });
 * await svc.faults.add({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } });
 * const { data } = await svc.requests.list({ operation: 'createVideo' });
 * await svc.reset();
 */
export interface TestHelpers {
  accounts: {
    /** `POST /test_helpers/accounts`: a new account with one key (its key and secret are in the answer). */
    create(input?: CreateTestAccountRequest): Promise<TestAccount>;
    /** `GET /test_helpers/accounts` */
    list(): Promise<TestAccountList>;
    /** `DELETE /test_helpers/accounts/{id}`: its keys are refused at once. */
    remove(id: number): Promise<DeletedTestAccount>;
  };
  /** `POST /test_helpers/reset`: a fresh start with the same options. */
  reset(): Promise<ResetResponse>;
  /** `POST /test_helpers/seed`: a fixture, all or nothing. */
  seed(fixture: SeedFixture): Promise<SeedResult>;
  requests: {
    /** `GET /test_helpers/requests`: the journal, newest first. */
    list(filter?: JournalFilter): Promise<JournalList>;
    /** `DELETE /test_helpers/requests`: every entry, or one account's. */
    clear(filter?: { account?: number | string }): Promise<JournalCleared>;
  };
  faults: {
    /** `POST /test_helpers/faults` */
    add(rule: CreateFaultRuleRequest): Promise<FaultRule>;
    /** `GET /test_helpers/faults` */
    list(filter?: { account?: number | string }): Promise<FaultRuleList>;
    /** `DELETE /test_helpers/faults/{id}` */
    remove(id: string): Promise<DeletedFaultRule>;
  };
  /** `POST /test_helpers/webhook_chaos`: an account's modes (the admin names the account). */
  webhookChaos(input: WebhookChaosRequest): Promise<WebhookChaos>;
  /**
   * `POST /test_helpers/clock/advance` as the admin: every account's time, or one account's with `account`;
   * checked as the route is (seconds up to a year, an account that exists), the data file tried first.
   */
  advanceClock(input: AdvanceClockRequest): Promise<TestClock>;
}

/** The operationIds of the helpers, each a route of the contract. */
export const HELPER_OPERATIONS = ['advanceClock', 'createTestAccount', 'listTestAccounts', 'deleteTestAccount', 'resetService', 'seedService', 'listRequests', 'clearRequests', 'createFaultRule', 'listFaultRules', 'deleteFaultRule', 'setWebhookChaos'] as const;

export type HelperId = (typeof HELPER_OPERATIONS)[number];
