import type { Gate } from '../core/gate.js';
import type { Idempotency } from '../core/idempotency.js';
import type { Step } from '../runner/chain.js';
import { answer, command, floor, identify, idempotency, keyRecords, limits, parseInput, unitOfWork, type GateRun } from '../runner/steps.js';
import type { Site } from '../core/site.js';

/** The few parts of the service the chain of `/v1`'s steps needs (not the whole `Service`). */
export interface RouteParts {
  gate: Gate;
  idempotency: Idempotency;
  store: { unit<R>(run: () => Promise<R>): Promise<R> };
  now(): number;
  site: Site;
  warn(message: string): void;
  /** Told an unexpected failure (answered 500). */
  report(error: Error): void;
}

/**
 * The test controls' two steps (testing/steps.ts: the request journal, fault rules). The
 * composition root (http/app.ts) plugs them in, so this chain imports nothing of testing/.
 */
export interface RouteControls {
  journal: Step<GateRun>;
  faults: Step<GateRun>;
}

/**
 * The steps every request of a contract route runs, in order (spec 4 and 7): the journal
 * around everything, the answer (error → problem), the key (401; the admin token on a test helper), 60 a
 * minute (429), a fault rule, the Idempotency-Key (a stored answer is replayed whatever the balance), the
 * balance floor (402), the contract's parse (400, 404, 422), and the command as one unit of work.
 */
export function routeSteps(parts: RouteParts, controls: RouteControls): Step<GateRun>[] {
  return [
    controls.journal,
    answer(parts),
    identify(parts.gate),
    limits(parts.gate),
    controls.faults,
    idempotency(keyRecords(parts.idempotency, parts.warn)),
    floor(parts.gate),
    parseInput(),
    unitOfWork(parts.store),
    command,
  ];
}

/**
 * The subset a page with its own credential runs (the photo upload link, whose token names the account):
 * the journal, the answer, fault rules, one unit of work and the command. No key, rate
 * limit or 402 floor (the link is checked by the page, and was paid for by the assistant that made it), no
 * Idempotency-Key (a link takes one photo), no parse (the page reads its multipart form, bounded).
 */
export function linkedSteps(parts: Pick<RouteParts, 'store' | 'site' | 'warn' | 'report'>, controls: RouteControls): Step<GateRun>[] {
  return [controls.journal, answer(parts), controls.faults, unitOfWork(parts.store), command];
}
