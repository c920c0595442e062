// FileDeliveryStore under load: claims/s (claim + complete of one delivery, as the receiver does it) with
// 100,000 processed deliveries already retained, at a concurrency of 256; then the same with
// `fsync: true`, where each group commit also waits for the disk to flush.
//   node --import tsx bench/file-store.ts [--retained 100000] [--concurrency 256] [--deliveries 20000] [--rounds 3]
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { intOption, median, num, table, target } from './lib.js';
import { code } from './parts/code.js';

// The package as users run it: built first (bench/parts/code.ts).
const { FileDeliveryStore } = await code<typeof import('../src/receiver/file-delivery-store.js')>('receiver/file-delivery-store.js');

const RETAINED = intOption('retained', 'BENCH_RETAINED', 100_000);
const CONCURRENCY = intOption('concurrency', 'BENCH_CONCURRENCY', 256);
const DELIVERIES = intOption('deliveries', 'BENCH_DELIVERIES', 20_000);
const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 3);
const MAX_SECONDS = intOption('max-seconds', 'BENCH_MAX_SECONDS', 30);
const LEASE_MS = 60_000;
const TARGET = 5_000;

/** The key the receiver claims per delivery (issue 30: the signed event and its clip id alone). */
function keysOf(n: number): string[] {
  return [`e:video.completed:${n}`];
}

/** A deliveries file as the store writes it, with `count` deliveries completed over the last 23 hours. */
function preload(file: string, count: number): void {
  const now = Date.now();
  const span = 23 * 60 * 60 * 1000;
  const rows: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = now - span + Math.floor((i * span) / count);
    for (const key of keysOf(-1 - i)) rows.push(`[${JSON.stringify(key)},${at}]`);
  }
  writeFileSync(file, `{"version":1,"processed":[${rows.join(',')}]}`);
}

interface Round {
  done: number;
  loadMs: number;
  claimsPerSec: number;
  writes: number;
  bytes: number;
}

async function round(fsync: boolean): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-bench-store-'));
  try {
    const file = join(dir, 'deliveries.json');
    preload(file, RETAINED);

    let start = performance.now();
    const store = new FileDeliveryStore({ file, fsync });
    // The store loads lazily; a claim on a fresh key waits for the load and measures it.
    if ((await store.claim(['warm-up'], LEASE_MS, 'warm-up')) !== 'claimed') throw new Error('warm-up claim refused');
    await store.release(['warm-up'], 'warm-up');
    const loadMs = performance.now() - start;
    const writesBefore = store.writes;

    let next = 0;
    let done = 0;
    const deadline = performance.now() + MAX_SECONDS * 1000;
    start = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < DELIVERIES && performance.now() < deadline) {
          const keys = keysOf(next++);
          const outcome = await store.claim(keys, LEASE_MS, keys[0]!);
          if (outcome !== 'claimed') throw new Error(`a fresh delivery was ${outcome}`);
          await store.complete(keys);
          done++;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const writes = store.writes - writesBefore;
    await store.close();

    // Every completion must be in the file: a new store on it finds each delivery processed.
    const reopened = new FileDeliveryStore({ file });
    for (const n of [0, done >> 1, done - 1]) {
      const outcome = await reopened.claim(keysOf(n), LEASE_MS, 'check');
      if (outcome !== 'processed') throw new Error(`delivery ${n} was not on disk after complete() (${outcome})`);
    }
    await reopened.close();
    return { done, loadMs, claimsPerSec: done / seconds, writes, bytes: statSync(file).size };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rounds: Round[] = [];
const synced: Round[] = [];
// Alternated, so both modes see the same machine.
for (let i = 0; i < ROUNDS; i++) {
  rounds.push(await round(false));
  synced.push(await round(true));
}
const claims = median(rounds.map((r) => r.claimsPerSec));
const writes = median(rounds.map((r) => r.writes));
const perWrite = median(rounds.map((r) => r.done / r.writes));
const bytes = median(rounds.map((r) => r.bytes));
const syncedClaims = median(synced.map((r) => r.claimsPerSec));
const syncedPerWrite = median(synced.map((r) => r.done / r.writes));

console.log(`Median of ${ROUNDS} rounds, each on a fresh file: ${num(DELIVERIES)} new deliveries, ${CONCURRENCY} at a time.\n`);
console.log(
  table(
    ['measure', 'value'],
    [
      ['retained deliveries before the run (2 keys each)', num(RETAINED)],
      ['load of the file at start-up', `${num(median(rounds.map((r) => r.loadMs)))} ms`],
      ['claims/s (claim + complete, mark on disk)', num(claims)],
      ['file writes (group commit)', `${Math.round(writes).toLocaleString('en-US')} (${num(perWrite)} completions per write)`],
      ['file size after the run', `${(bytes / 1024 / 1024).toFixed(1)} MiB`],
      [
        'claims/s with `fsync: true` (each group commit flushed to the device)',
        `${num(syncedClaims)} (${num(syncedPerWrite)} completions per write)`,
      ],
    ],
  ),
);
console.log('');
console.log(target(`≥ ${num(TARGET)} claims/s with ${num(RETAINED)} retained (${num(claims)}/s)`, claims >= TARGET));
