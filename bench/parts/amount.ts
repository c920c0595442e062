// A fixed number of requests sent by autocannon, timed to the last response (not a benchmark: `bench/run.ts`
// reads only the top folder).
//
// autocannon hands back its result on its next one-second sample tick, not when the last response arrives: a
// burst of 3,000 requests that the bare app served in 0.4 s resolved after 1.03 s. Timing the promise made
// every events/s figure a whole number of seconds over the burst (2.02 s, 4.03 s) and the faster path the more
// understated; the time of the last response is what the burst took.
import { createRequire } from 'node:module';

export interface AutocannonResult {
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}

export interface AutocannonRequest {
  method: string;
  body: string;
  setupRequest: (req: { headers?: Record<string, string> }) => object;
}

interface Tracker {
  on(event: 'response', listener: () => void): void;
}
type Autocannon = (
  options: { url: string; connections: number; amount: number; requests: AutocannonRequest[] },
  done: (error: Error | null, result: AutocannonResult) => void,
) => Tracker;
// autocannon ships no types; with a callback it returns its tracker, whose `response` event marks each reply.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/**
 * Sends `amount` requests, `connections` at a time, and resolves with autocannon's result and the seconds
 * from the start to the last response. Throws unless every request got a 2xx.
 */
export function sendAmount(url: string, connections: number, amount: number, requests: AutocannonRequest[]): Promise<{ result: AutocannonResult; seconds: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let last = started;
    const tracker = autocannon({ url, connections, amount, requests }, (error, result) => {
      if (error) return reject(error);
      const bad = result.errors + result.timeouts + result.non2xx;
      if (bad || result['2xx'] !== amount) return reject(new Error(`${url}: ${result['2xx']} of ${amount} requests got 2xx (${bad} errors, timeouts or non-2xx)`));
      resolve({ result, seconds: (last - started) / 1000 });
    });
    tracker.on('response', () => (last = performance.now()));
  });
}
