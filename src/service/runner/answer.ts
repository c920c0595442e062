import { headersOf, problemOf } from '../http/respond.js';
import type { GateRun } from './admit.js';
import { named, successOf, WRITTEN, type Outcome, type Step } from './chain.js';
import { failureOf } from './failure.js';

/** What the answer step needs: the origin (a 402's top-up link), and where failures are told. */
export interface AnswerParts {
  origin(): string;
  warn(message: string): void;
  report(error: Error): void;
}

/**
 * The answer of a run (issue 31 item 1: the one error → problem mapping): the command's value with the
 * route's 2xx status, an early step's outcome (a replay, a fault), or the problem of what was thrown. A
 * fault rule's `cut: after` sends none of them.
 */
export function answer(parts: AnswerParts): Step<GateRun> {
  return named('answer', async (run, next) => {
    const { request, exchange } = run;
    let outcome: Outcome;
    try {
      await next();
      if (run.outcome) outcome = run.outcome;
      else if (run.value === WRITTEN || request.answered()) outcome = { kind: 'written' };
      else outcome = { kind: 'json', status: successOf(run.route), body: run.value, headers: run.headers };
    } catch (error) {
      const refusal = failureOf(error, parts);
      outcome = request.answered()
        ? { kind: 'abort' }
        : { kind: 'problem', body: problemOf(refusal, { origin: parts.origin(), instance: request.path }), headers: { ...run.headers, ...headersOf(refusal) } };
    }
    if (run.cutAfter && outcome.kind !== 'abort') outcome = { kind: 'drop' };
    if (outcome.kind === 'problem') exchange.code = outcome.body.code;
    if (outcome.kind === 'drop' || outcome.kind === 'hang') exchange.dropped = true;
    await run.respond(outcome);
  });
}
