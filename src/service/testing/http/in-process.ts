import { routeOf, type RouteSpec } from '../../contract/routes.js';
import type { Outcome } from '../../runner/chain.js';
import { CallRequest, type CallInput, type Command, type OperationRun } from '../../runner/call.js';
import type { HelperId, TestHelpers } from './test-helpers.js';

// startService()'s helpers in process, on the route chain. Apart from the published
// `TestHelpers` type (test-helpers.ts), so the package's declarations name no runner type.

/** What the helpers need of the service, not the whole `Service`. */
export interface HelperParts {
  /** The chain every route runs (http/app.ts): the journal, the answer, the admin token, fault rules, the parse, the unit of work. */
  run: OperationRun;
  /** The helpers' commands, by operationId (the routes' handlers). */
  commands: Record<HelperId, Command>;
  /** The admin token each call is made with. */
  adminToken: string;
}

/**
 * The test helpers of a service, acting as the admin token does. Each call runs the
 * route's own chain in process, so it is journalled (as the admin's `METHOD /test_helpers/…`), checked by
 * the contract and saved as one unit of work, a failed write refused with 503; fault rules never select a
 * test helper, over HTTP or here.
 */
export function testHelpersOf({ run, commands, adminToken }: HelperParts): TestHelpers {
  const call = async <T>(operationId: HelperId, input: Omit<CallInput, 'authorization'> = {}): Promise<T> => {
    const route: RouteSpec = routeOf(operationId);
    const request = new CallRequest(route, { ...input, authorization: `Bearer ${adminToken}` });
    let outcome: Outcome | undefined;
    await run(route, commands[operationId], request, (answer) => {
      outcome = answer;
      request.settle(answer);
    });
    if (outcome?.kind === 'json') return outcome.body as T;
    // The refusal the answer step made the problem of: the command's own error, with its stack.
    if (outcome?.kind === 'problem') throw outcome.error;
    // A test helper is never faulted (testing/fault-check.ts), so it never goes unanswered.
    throw new Error(`${operationId} was not answered (${outcome?.kind ?? 'no outcome'}).`);
  };
  return {
    accounts: {
      create: (input = {}) => call('createTestAccount', { body: input }),
      list: () => call('listTestAccounts'),
      remove: (id) => call('deleteTestAccount', { params: { id } }),
    },
    reset: () => call('resetService'),
    seed: (fixture) => call('seedService', { body: fixture }),
    requests: {
      list: (filter = {}) => call('listRequests', { query: { ...filter } }),
      clear: (filter = {}) => call('clearRequests', { query: { ...filter } }),
    },
    faults: {
      add: (rule) => call('createFaultRule', { body: rule }),
      list: (filter = {}) => call('listFaultRules', { query: { ...filter } }),
      remove: (id) => call('deleteFaultRule', { params: { id } }),
    },
    webhookChaos: (input) => call('setWebhookChaos', { body: input }),
    advanceClock: (input) => call('advanceClock', { body: input }),
  };
}
