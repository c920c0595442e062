import { ServiceError } from '../contract/problems.js';
import type { Caller, Gate, Identified } from '../core/gate.js';
import { rateLimitHeaders } from '../core/rate-limit.js';
import { named, type Run, type Step } from './chain.js';

// Issue 31 item 1: who is calling, their 60 a minute and the balance floor, as three steps of the runner.

/** A run of the service's routes, with who its credential named until the limits admit it. */
export type GateRun = Run<Caller> & { who?: Identified };

/**
 * Who the credential names (spec 5.4; 401): the bearer key of a keyed route, and for a test helper the
 * admin token (no caller: every account, no rate window) or, where the route takes one, an API key.
 */
export function identify(gate: Pick<Gate, 'identify' | 'identifyAdmin'>): Step<GateRun> {
  return named('identify', async (run, next) => {
    const { auth } = run.route;
    const { authorization, address } = run.request;
    if (auth === 'admin' || auth === 'admin_or_key') {
      const credential = gate.identifyAdmin(authorization, address, { orKey: auth === 'admin_or_key' });
      if (!credential.admin) run.who = credential.who;
    } else if (auth !== 'none') run.who = gate.identify(authorization, address);
    return next();
  });
}

/** 60 requests a minute per key (spec 4, 8): every answer carries the window's headers; a full window is 429. */
export function limits(gate: Pick<Gate, 'admit'>): Step<GateRun> {
  return named('limits', async (run, next) => {
    if (!run.who) return next();
    const { caller, decision } = await gate.admit(run.who);
    run.caller = caller;
    run.exchange.caller = caller;
    run.headers = rateLimitHeaders(decision);
    if (!decision.allowed) throw new ServiceError('rate_limit_exceeded', `At most ${decision.limit} requests a minute per API key.`, { retryAfter: decision.retryAfter });
    return next();
  });
}

/** Spec 4: below 10 credits every keyed route answers 402 insufficient_credits (the test helpers stay open). */
export function floor(gate: Pick<Gate, 'floor'>): Step<GateRun> {
  return named('floor', async (run, next) => {
    if (run.route.auth === 'key') gate.floor(run.caller.account);
    return next();
  });
}
