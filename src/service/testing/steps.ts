import type { Caller } from '../core/gate.js';
import { named, type ControlledRun as ChainControlledRun, type Step } from '../runner/chain.js';
import { faultError } from './fault-answer.js';
import type { FaultRules } from './faults.js';
import type { RequestJournal } from './journal.js';
import type { Site } from '../core/site.js';

// The test controls plug into the runner as two steps; the runner's own steps know none of them.

/** What the test controls read of a run of the service (runner/chain.ts). */
export type ControlledRun = ChainControlledRun<Caller>;

/** The fault step's collaborators: the rules, and the origin a 402's top-up link names. */
export interface FaultStepParts {
  /** `kept`, where given, lets a run with no rule kept ask nothing. */
  rules: Pick<FaultRules, 'decide'> & Partial<Pick<FaultRules, 'kept'>>;
  site: Site;
}

/**
 * A fault rule acts after the credential and its rate window, before anything else is done: a
 * problem (nothing done), a real delay, a cut (before, or after the operation took effect) or a hang.
 */
export function faults({ rules, site }: FaultStepParts): Step<ControlledRun> {
  const act = async (run: ControlledRun, fault: NonNullable<ReturnType<FaultStepParts['rules']['decide']>>, next: () => Promise<void>): Promise<void> => {
    const { action } = fault;
    if (action.kind === 'problem') {
      throw faultError(action.code, { ruleId: fault.rule.id, instance: run.request.path, origin: site.origin, balance: run.caller?.account.balance, itemCodes: fault.itemCodes, retryAfter: action.retryAfter });
    }
    if (action.kind === 'cut' && action.when === 'before') return void (run.outcome = { kind: 'drop' });
    if (action.kind === 'hang') return void (run.outcome = { kind: 'hang' });
    if (action.kind === 'delay') await realDelay(action.ms, (listener) => run.request.onClose(listener));
    run.cutAfter = action.kind === 'cut';
    return next();
  };
  // Plain (no promise of its own) when no rule acts, as for nearly every request; with no rule kept at all
  // it asks the rules nothing (no fault rules, no fault code on the request's path).
  return named('faults', (run, next) => {
    if (rules.kept?.size === 0) return next();
    const fault = rules.decide({ operation: run.operation, account: run.caller?.account.id ?? null });
    return fault ? act(run, fault, next) : next();
  });
}

/** Waits `ms` real milliseconds (a fault rule's `delay_ms`: what a client's time-out sees), or until the client has gone. */
export function realDelay(ms: number, onClose: (listener: () => void) => () => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unsubscribe = onClose(done);
  });
}

/** Called once a run has been answered (or its connection ended): the request journal. */
export function journal({ journal: requests, now }: { journal: Pick<RequestJournal, 'record'>; now(): number }): Step<ControlledRun> {
  return named('journal', async (run, next) => {
    try {
      await next();
    } finally {
      const { operation, request, exchange } = run;
      // The journal's own helpers are not journalled: reading it would otherwise change what it answers.
      if (operation !== 'listRequests' && operation !== 'clearRequests') {
        requests.record({
          at: now(),
          account: exchange.caller?.account.id ?? null,
          keyId: exchange.caller?.key.id ?? null,
          admin: exchange.admin,
          operation,
          method: request.method,
          path: request.path,
          query: request.query,
          idempotencyKey: exchange.idempotencyKey,
          replayed: exchange.replayed,
          // No answer at all (a fault's cut or hang): status 0.
          status: exchange.dropped ? 0 : request.status(),
          code: exchange.code,
          body: exchange.body,
        });
      }
    }
  });
}
