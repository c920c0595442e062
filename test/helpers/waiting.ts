import type { SimulatedClock } from '../../src/service/core/clock.js';
import type { Answer } from './service-client.js';

/**
 * Sends a request that waits on the simulated clock (GET /v1/images/{id}?wait=…) and resolves once the
 * service holds it, its timer armed (or it has answered already), so the test can move the clock under it.
 * The answer is wrapped: awaiting it is the test's next step, after `clock.advance()`.
 * @example
 * const ended = await waiting(clock, () => client.get('/images/1?wait=30'));
 * await clock.advance(5_000);
 * expect((await ended.answer).body).toMatchObject({ status: 'done' });
 */
export async function waiting(clock: SimulatedClock, send: () => Promise<Answer>): Promise<{ answer: Promise<Answer> }> {
  const before = clock.timers;
  let settled = false;
  const answer = send().finally(() => void (settled = true));
  while (!settled && clock.timers <= before) await new Promise((resolve) => setTimeout(resolve, 1));
  return { answer };
}
