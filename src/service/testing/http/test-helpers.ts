import type { z } from 'zod';
import type { AdvanceRequest, Clock, DeletedFaultRule, DeletedTestAccount, FaultRule, FaultRuleList, FaultRuleRequest, JournalCleared, JournalList, ResetResponse, TestAccount, TestAccountList, WebhookChaos, WebhookChaosRequest, CreateTestAccountRequest } from '../contract/test-helpers.js';
import type { SeedFixture, SeedResult } from '../contract/seed.js';

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
 * The test helpers of issue 22 on the `startService` handle: what the admin token reaches over HTTP, in
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
    create(input?: z.input<typeof CreateTestAccountRequest>): Promise<z.output<typeof TestAccount>>;
    /** `GET /test_helpers/accounts` */
    list(): Promise<z.output<typeof TestAccountList>>;
    /** `DELETE /test_helpers/accounts/{id}`: its keys are refused at once. */
    remove(id: number): Promise<z.output<typeof DeletedTestAccount>>;
  };
  /** `POST /test_helpers/reset`: a fresh start with the same options. */
  reset(): Promise<z.output<typeof ResetResponse>>;
  /** `POST /test_helpers/seed`: a fixture, all or nothing. */
  seed(fixture: z.input<typeof SeedFixture>): Promise<z.output<typeof SeedResult>>;
  requests: {
    /** `GET /test_helpers/requests`: the journal, newest first. */
    list(filter?: JournalFilter): Promise<z.output<typeof JournalList>>;
    /** `DELETE /test_helpers/requests`: every entry, or one account's. */
    clear(filter?: { account?: number | string }): Promise<z.output<typeof JournalCleared>>;
  };
  faults: {
    /** `POST /test_helpers/faults` */
    add(rule: z.input<typeof FaultRuleRequest>): Promise<z.output<typeof FaultRule>>;
    /** `GET /test_helpers/faults` */
    list(filter?: { account?: number | string }): Promise<z.output<typeof FaultRuleList>>;
    /** `DELETE /test_helpers/faults/{id}` */
    remove(id: string): Promise<z.output<typeof DeletedFaultRule>>;
  };
  /** `POST /test_helpers/webhook_chaos`: an account's modes (the admin names the account). */
  webhookChaos(input: z.input<typeof WebhookChaosRequest>): Promise<z.output<typeof WebhookChaos>>;
  /**
   * `POST /test_helpers/clock/advance` as the admin: every account's time, or one account's with `account`;
   * checked as the route is (seconds up to a year, an account that exists), the data file tried first.
   */
  advanceClock(input: z.input<typeof AdvanceRequest>): Promise<z.output<typeof Clock>>;
}

/** The operationIds of the helpers, each a route of the contract. */
export const HELPER_OPERATIONS = ['advanceClock', 'createTestAccount', 'listTestAccounts', 'deleteTestAccount', 'resetService', 'seedService', 'listRequests', 'clearRequests', 'createFaultRule', 'listFaultRules', 'deleteFaultRule', 'setWebhookChaos'] as const;

export type HelperId = (typeof HELPER_OPERATIONS)[number];
