import type { z } from 'zod';
import { SeedFixture, SeedResult } from './seed.js';
import {
  AdvanceRequest, Clock, CreateTestAccountRequest, DeletedFaultRule, DeletedTestAccount, FaultListQuery, FaultPath, FaultRule, FaultRuleList, FaultRuleRequest, JournalCleared, JournalClearQuery, JournalList,
  JournalQuery, MAX_FAULT_RULES, ResetResponse, TestAccount, TestAccountList, TestAccountPath, WebhookChaos, WebhookChaosRequest,
} from './test-helpers.js';

// The test helpers as routes (routes.ts spreads the served ones, SERVED_TEST_HELPER_ROUTES, into ROUTES, which
// checks them against RouteSpec; this file imports nothing of routes.ts, so there is no import cycle). `admin`
// routes are service-wide and take the admin token only; `admin_or_key` ones take the admin token, or an API key
// for its own account's entries and rules.

const json = <S extends z.ZodType>(description: string, schema: S) => ({ description, schema });
const ADMIN = ' (admin token)';
const EITHER = ' (admin token: every account; API key: its own)';

/** The routes of the test helpers, the clock's first. */
export const TEST_HELPER_ROUTES = [
  {
    operationId: 'getClock', method: 'GET', path: '/test_helpers/clock', tag: 'Test helpers', auth: 'admin_or_key',
    summary: 'The simulated time every rule reads for the key’s account (the service’s own with the admin token)',
    responses: { 200: json('The clock.', Clock) },
    problems: [],
  },
  {
    operationId: 'advanceClock', method: 'POST', path: '/test_helpers/clock/advance', tag: 'Test helpers', auth: 'admin_or_key', body: AdvanceRequest,
    summary: 'Move the key’s account’s time (every account’s with the admin token), firing on the way what falls due',
    responses: { 200: json('The clock once everything due has settled.', Clock) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'createTestAccount', method: 'POST', path: '/test_helpers/accounts', tag: 'Test helpers', auth: 'admin', body: CreateTestAccountRequest,
    summary: `A new account with its own key, webhook secret, balance, limits and clock${ADMIN}`,
    responses: { 201: json('The account, with its API key and webhook secret (shown once).', TestAccount) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'listTestAccounts', method: 'GET', path: '/test_helpers/accounts', tag: 'Test helpers', auth: 'admin',
    summary: `Every account, without its secrets${ADMIN}`,
    responses: { 200: json('The accounts, oldest first.', TestAccountList) },
    problems: [],
  },
  {
    operationId: 'deleteTestAccount', method: 'DELETE', path: '/test_helpers/accounts/{id}', tag: 'Test helpers', auth: 'admin', params: TestAccountPath,
    summary: `Delete an account and everything it owns: its keys are 401 at once${ADMIN}`,
    responses: { 200: json('Deleted.', DeletedTestAccount) },
    problems: ['not_found', 'invalid_parameter'],
  },
  {
    operationId: 'resetService', method: 'POST', path: '/test_helpers/reset', tag: 'Test helpers', auth: 'admin',
    summary: `Back to a fresh start with the same options: the configured first account and nothing else${ADMIN}`,
    responses: { 200: json('Reset.', ResetResponse) },
    problems: [],
  },
  {
    operationId: 'seedService', method: 'POST', path: '/test_helpers/seed', tag: 'Test helpers', auth: 'admin', body: SeedFixture, pointer: true,
    summary: `Make the accounts, assets, clips and image jobs of a fixture, all or nothing${ADMIN}`,
    responses: { 201: json('The ids of what was made, by name.', SeedResult) },
    problems: ['invalid_parameter', 'invalid_model', 'invalid_duration', 'invalid_ratio', 'invalid_callback_url'],
  },
  {
    operationId: 'listRequests', method: 'GET', path: '/test_helpers/requests', tag: 'Test helpers', auth: 'admin_or_key', query: JournalQuery,
    summary: `The request journal, newest first, secrets redacted${EITHER}`,
    responses: { 200: json('The matching entries.', JournalList) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'clearRequests', method: 'DELETE', path: '/test_helpers/requests', tag: 'Test helpers', auth: 'admin_or_key', query: JournalClearQuery,
    summary: `Clear the request journal${EITHER}`,
    responses: { 200: json('How many entries were cleared.', JournalCleared) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'createFaultRule', method: 'POST', path: '/test_helpers/faults', tag: 'Test helpers', auth: 'admin_or_key', body: FaultRuleRequest,
    // The bound a client meets as a 400, stated in the document.
    summary: `Make matching requests fail, wait, lose their answer or hang; at most ${MAX_FAULT_RULES} rules per account and ${MAX_FAULT_RULES} service-wide${EITHER}`,
    responses: { 201: json('The rule, first among those made later.', FaultRule) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'listFaultRules', method: 'GET', path: '/test_helpers/faults', tag: 'Test helpers', auth: 'admin_or_key', query: FaultListQuery,
    summary: `The fault rules, in the order they are tried, with their counts${EITHER}`,
    responses: { 200: json('The rules.', FaultRuleList) },
    problems: ['invalid_parameter'],
  },
  {
    operationId: 'deleteFaultRule', method: 'DELETE', path: '/test_helpers/faults/{id}', tag: 'Test helpers', auth: 'admin_or_key', params: FaultPath,
    summary: `Delete a fault rule${EITHER}`,
    responses: { 200: json('Deleted.', DeletedFaultRule) },
    problems: ['not_found'],
  },
  {
    operationId: 'setWebhookChaos', method: 'POST', path: '/test_helpers/webhook_chaos', tag: 'Test helpers', auth: 'admin_or_key', body: WebhookChaosRequest,
    summary: `Deliver an account's webhooks twice, at once, cut, late, out of order or under the previous secret${EITHER}`,
    responses: { 200: json('The account’s modes now.', WebhookChaos) },
    problems: ['invalid_parameter'],
  },
] as const;

/** The test helper routes the service serves (in ROUTES, the OpenAPI document and the docs' table): every one. */
export const SERVED_TEST_HELPER_ROUTES = TEST_HELPER_ROUTES;
