// Issue 22's speed: how long a fresh in-process `startService` takes to start and to close (target
// ≤ 50 ms each, so one service per test file is free), and how long POST /test_helpers/reset takes with
// 10,000 clips (seeded as done clips, the cheapest way to fill the table).
//   node --import tsx bench/service-start.ts [--rounds 20] [--clips 10000] [--resets 5]
import { performance } from 'node:perf_hooks';
import { intOption, median, table, target } from './lib.js';
import { code } from './parts/code.js';

// The package as users run it: built first (bench/parts/code.ts).
const { startService } = await code<typeof import('../src/service/http/app.js')>('service/http/app.js');

const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 20);
const CLIPS = intOption('clips', 'BENCH_CLIPS', 10_000);
const RESETS = intOption('resets', 'BENCH_RESETS', 5);
const quiet = { warn: () => undefined, assistant: false } as const;

// One warm-up start, so module loading and the first JIT are not counted as a test file's cost.
await (await startService(quiet)).close();

const starts: number[] = [];
const closes: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const t0 = performance.now();
  const svc = await startService(quiet);
  const t1 = performance.now();
  await svc.close();
  starts.push(t1 - t0);
  closes.push(performance.now() - t1);
}

// The default (the assistant endpoint on), as a user's `startService()` without options.
const withAssistant: number[] = [];
const closeAssistant: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const t0 = performance.now();
  const started = await startService({ warn: () => undefined });
  const t1 = performance.now();
  await started.close();
  withAssistant.push(t1 - t0);
  closeAssistant.push(performance.now() - t1);
}

const svc = await startService(quiet);
const fixture = { clips: Array.from({ length: CLIPS }, (_, i) => ({ name: `c${i}`, account: 'default', status: 'done' as const })) };
const resets: number[] = [];
const seeds: number[] = [];
for (let round = 0; round < RESETS; round++) {
  const s0 = performance.now();
  await svc.service.seeds.run(fixture);
  seeds.push(performance.now() - s0);
  const t0 = performance.now();
  const res = await fetch(`${svc.origin}/test_helpers/reset`, { method: 'POST', headers: { authorization: `Bearer ${svc.adminToken}` } });
  if (res.status !== 200) throw new Error(`reset answered ${res.status}`);
  resets.push(performance.now() - t0);
}
await svc.close();

const ms = (value: number) => `${value.toFixed(1)} ms`;
console.log(`## In-process startService (medians of ${ROUNDS}; reset of ${RESETS})\n`);
console.log(
  table(
    ['what', 'median', 'min', 'max'],
    [
      ['startService() (in memory, no assistant)', ms(median(starts)), ms(Math.min(...starts)), ms(Math.max(...starts))],
      ['close()', ms(median(closes)), ms(Math.min(...closes)), ms(Math.max(...closes))],
      ['startService() (in memory, assistant on: the default)', ms(median(withAssistant)), ms(Math.min(...withAssistant)), ms(Math.max(...withAssistant))],
      ['close() (assistant on)', ms(median(closeAssistant)), ms(Math.min(...closeAssistant)), ms(Math.max(...closeAssistant))],
      [`seed ${CLIPS.toLocaleString('en-US')} done clips (one unit)`, ms(median(seeds)), ms(Math.min(...seeds)), ms(Math.max(...seeds))],
      [`POST /test_helpers/reset with ${CLIPS.toLocaleString('en-US')} clips`, ms(median(resets)), ms(Math.min(...resets)), ms(Math.max(...resets))],
    ],
  ),
);
console.log('');
console.log(target('start ≤ 50 ms', median(starts) <= 50));
console.log(target('close ≤ 50 ms', median(closes) <= 50));
console.log(target('start ≤ 50 ms with the assistant on', median(withAssistant) <= 50));
console.log(target('close ≤ 50 ms with the assistant on', median(closeAssistant) <= 50));
