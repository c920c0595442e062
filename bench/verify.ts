// Signature verification: ops/s of cliphook's `verifySignature` against bare node:crypto and three
// webhook libraries, each checking a correctly signed request in its own scheme.
//   node --import tsx bench/verify.ts [--rounds 21] [--batch-ms 50]
import { createHmac, timingSafeEqual } from 'node:crypto';
import { verify as octokitVerify, sign as octokitSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import { eventBody, intOption, median, num, ratio, table, target } from './lib.js';
import { code } from './parts/code.js';

// The package as users run it: built first (bench/parts/code.ts).
const { sign, verifySignature } = await code<typeof import('../src/protocol/signature.js')>('protocol/signature.js');

const ROUNDS = intOption('rounds', 'BENCH_ROUNDS', 21);
const BATCH_MS = intOption('batch-ms', 'BENCH_BATCH_MS', 50);

// One secret string for every scheme. Svix/standard-webhooks read it as `whsec_` + base64 key bytes;
// the others (cliphook, GitHub, Stripe) key the HMAC with the string's UTF-8 bytes.
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const stripe = new Stripe('sk_test_bench_never_used');

interface Case {
  name: string;
  /** One verification; returns whether it accepted the request. */
  run: () => boolean | Promise<boolean>;
  async?: boolean;
}

function casesFor(size: number): Case[] {
  const text = eventBody(1, size);
  const bytes = Buffer.from(text, 'utf8');
  const header = sign(bytes, SECRET);

  const svix = new SvixWebhook(SECRET);
  const svixId = 'msg_bench_1';
  const svixHeaders = { 'svix-id': svixId, 'svix-timestamp': String(Math.floor(Date.now() / 1000)), 'svix-signature': '' };
  svixHeaders['svix-signature'] = svix.sign(svixId, new Date(Number(svixHeaders['svix-timestamp']) * 1000), bytes);

  const stripeHeader = stripe.webhooks.generateTestHeaderString({ payload: text, secret: SECRET });

  return [
    {
      name: 'bare node:crypto (createHmac + timingSafeEqual)',
      run: () => {
        if (!header.startsWith('sha256=')) return false;
        const given = Buffer.from(header.slice(7), 'hex');
        const expected = createHmac('sha256', SECRET).update(bytes).digest();
        return given.length === expected.length && timingSafeEqual(expected, given);
      },
    },
    { name: 'cliphook verifySignature', run: () => verifySignature(bytes, header, SECRET) },
    // The API takes the payload as a string only; a pre-decoded string is handed to it.
    { name: '@octokit/webhooks-methods verify (async)', run: () => octokitVerify(SECRET, text, header), async: true },
    // Both return the parsed event, so their figure includes a JSON.parse of the body.
    { name: 'svix Webhook.verify', run: () => svix.verify(bytes, svixHeaders) !== undefined },
    { name: 'stripe webhooks.constructEvent', run: () => stripe.webhooks.constructEvent(bytes, stripeHeader, SECRET) !== undefined },
  ];
}

/** Runs `n` verifications and returns ops/s; throws if any was refused (a broken case must not look fast). */
async function batch(c: Case, n: number): Promise<number> {
  let accepted = 0;
  const start = process.hrtime.bigint();
  if (c.async) {
    for (let i = 0; i < n; i++) if (await c.run()) accepted++;
  } else {
    for (let i = 0; i < n; i++) if (c.run()) accepted++;
  }
  const ns = Number(process.hrtime.bigint() - start);
  if (accepted !== n) throw new Error(`${c.name} refused ${n - accepted} of ${n} correctly signed requests.`);
  return (n / ns) * 1e9;
}

/** Iterations for a batch of about BATCH_MS, from a short warm-up. */
async function calibrate(c: Case): Promise<number> {
  let n = 50;
  for (;;) {
    const start = performance.now();
    await batch(c, n);
    const ms = performance.now() - start;
    if (ms > 30) return Math.max(20, Math.round((n * BATCH_MS) / ms));
    n *= 4;
  }
}

interface Result {
  name: string;
  opsPerSec: number;
  /** Median over rounds of (this case ÷ bare node in the same round). */
  vsBare: number;
}

async function measure(size: number): Promise<Result[]> {
  const cases = casesFor(size);
  const counts = [];
  for (const c of cases) counts.push(await calibrate(c));
  const samples = cases.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round so no case always runs right after the same neighbour.
    for (let k = 0; k < cases.length; k++) {
      const i = (k + round) % cases.length;
      samples[i]!.push(await batch(cases[i]!, counts[i]!));
    }
  }
  const bare = samples[0]!;
  return cases.map((c, i) => ({
    name: c.name,
    opsPerSec: median(samples[i]!),
    vsBare: median(samples[i]!.map((ops, round) => ops / bare[round]!)),
  }));
}

// Sanity: the GitHub scheme is the same HMAC as ours, so both must produce the same header.
if ((await octokitSign(SECRET, 'x')) !== sign('x', SECRET)) throw new Error('cliphook and octokit disagree on sha256=<hex>.');

const SIZES = [
  { label: '450 B', size: 450 },
  { label: '64 KiB', size: 64 * 1024 },
];
const rows: string[][] = [];
const ours: number[] = [];
for (const { label, size } of SIZES) {
  const results = await measure(size);
  for (const r of results) rows.push([r.name, label, num(r.opsPerSec), ratio(r.vsBare, 1)]);
  ours.push(results[1]!.vsBare);
}

console.log(`ops/s: median of ${ROUNDS} interleaved rounds of ~${BATCH_MS} ms; ratio: median of the per-round ratios.\n`);
console.log(table(['implementation', 'body', 'ops/s', 'vs bare node'], rows));
console.log('');
console.log(target(`verifySignature ≥ 1.0× bare node on ${SIZES[0]!.label} (${ours[0]!.toFixed(2)}×)`, ours[0]! >= 1));
console.log(target(`verifySignature ≥ 1.0× bare node on 64 KiB (${ours[1]!.toFixed(2)}×)`, ours[1]! >= 1));
