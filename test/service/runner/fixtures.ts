// A run of the runner's chain without HTTP: a route of the contract, a request as plain values, and the
// outcome the chain sends, so each step can be tested alone (issue 31 item 5).
import { routeOf as contractRouteOf, type OperationId, type RouteSpec } from '../../../src/service/contract/routes.js';
import type { Caller } from '../../../src/service/core/gate.js';
import type { GateRun } from '../../../src/service/runner/steps.js';
import type { Outcome } from '../../../src/service/runner/chain.js';
import type { JsonBody } from '../../../src/service/runner/chain.js';

/** The contract's route of an operation, as the steps take it. */
export const routeOf = (operationId: OperationId): RouteSpec => contractRouteOf(operationId);

export interface FakeRun extends GateRun {
  sent: Outcome[];
  closeListeners: Array<() => void>;
}

/** A run of `operationId` with what its request says; `command` answers the value the command step gets. */
export interface FakeRequest {
  json?: JsonBody;
  idempotencyKey?: string;
  params?: Record<string, string>;
  query?: Record<string, string>;
  command?: (input: unknown) => unknown;
  answered?: boolean;
}

export function fakeRun(operationId: OperationId, { json = { ok: true, value: undefined }, idempotencyKey, params = {}, query = {}, command = () => ({ ok: true }), answered = false }: FakeRequest = {}): FakeRun {
  const route = routeOf(operationId);
  const sent: Outcome[] = [];
  const closeListeners: Array<() => void> = [];
  return {
    route,
    operation: route.operationId,
    request: {
      method: route.method,
      path: route.path,
      authorization: 'Bearer sk_test',
      address: '127.0.0.1',
      idempotencyKey,
      params,
      query,
      json: async () => json,
      discard: () => undefined,
      answered: () => answered,
      onClose(listener) {
        closeListeners.push(listener);
        return () => closeListeners.splice(closeListeners.indexOf(listener), 1);
      },
      status: () => (sent[0]?.kind === 'json' ? sent[0].status : sent[0]?.kind === 'problem' ? sent[0].body.status : 0),
    },
    exchange: { caller: null, idempotencyKey: idempotencyKey ?? null, replayed: false, body: undefined, code: null, dropped: false, admin: false },
    command,
    respond: (outcome) => void sent.push(outcome),
    caller: null as unknown as Caller,
    headers: {},
    cutAfter: false,
    lease: null,
    pending: null,
    input: { params: {}, query: {}, body: undefined },
    value: undefined,
    outcome: null,
    sent,
    closeListeners,
  };
}

/** A caller of account 1 with `balance` credits. */
export const callerWith = (balance: number): Caller => ({ account: { id: 1, balance } as Caller['account'], key: { id: 'key_1', token: 'sk_test' } as Caller['key'] });
