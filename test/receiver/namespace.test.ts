// The receiver's `namespace`: one app serving several accounts (one signing secret each) on one delivery
// store keeps their event keys and reconcile cursors apart; without it, keys stay as they were.
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FileDeliveryStore, MemoryDeliveryStore, RedisDeliveryStore, createReceiver, type DeliveryStore, type WebhookEvent } from '../../src/index.js';
import { createReceiver as createWebReceiver } from '../../src/web.js';
import { eventKey } from '../../src/receiver/event-key.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { completedEvent, signedRequest, tempDir } from '../helpers/webhooks.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const SECRET_A = 'whsec_account_a';
const SECRET_B = 'whsec_account_b';
const redis = redisAvailable() ? await startRedis() : null;
afterAll(async () => {
  await redis?.stop();
});

function receiverOn(store: DeliveryStore, secret: string, namespace?: string) {
  const receiver = createReceiver({ secret, store, clock: () => NOW, ...(namespace === undefined ? {} : { namespace }) });
  const seen: WebhookEvent[] = [];
  receiver.onAny((event) => void seen.push(event));
  return { receiver, seen };
}

/** The same clip id, signed by each account's secret. */
async function sendBoth(a: ReturnType<typeof receiverOn>, b: ReturnType<typeof receiverOn>) {
  const event = completedEvent({ id: 777, delivered_at: iso(NOW) });
  const toA = signedRequest(event, { secret: SECRET_A, deliveryId: 'dlv_a' });
  const toB = signedRequest(event, { secret: SECRET_B, deliveryId: 'dlv_b' });
  const first = await a.receiver.receive(Buffer.from(toA.body), toA.headers);
  const second = await b.receiver.receive(Buffer.from(toB.body), toB.headers);
  return [JSON.parse(first.body) as unknown, JSON.parse(second.body) as unknown];
}

/** GET /videos with one clip that ended a minute before NOW (spec 2.1, 4.3). */
const oneClip = vi.fn(async (input: string | URL | Request) => {
  const url = new URL(String(input));
  const done = url.searchParams.get('status') === 'done';
  const data = done
    ? [{ id: 5, status: 'done', prompt: 'clip 5', video_url: 'https://svc.test/v1/media/5.mp4?exp=1&sig=ab', poster_url: null, share_page_url: null, credits_used: 9, refunded: false, model: 'standard', duration: 5, ratio: '16:9', progress: null, error: null, error_code: null, created_at: iso(NOW - 10 * MIN), completed_at: iso(NOW - 2 * MIN), poll_url: 'https://svc.test/v1/videos/5' }]
    : [];
  return Response.json({ data, total: data.length, limit: Number(url.searchParams.get('limit')), offset: 0 });
}) as unknown as typeof globalThis.fetch;
const reconcileWith = { apiKey: 'sk_test', baseUrl: 'https://svc.test/v1', fetch: oneClip };

describe('receiver namespace', () => {
  it('two accounts on one FileDeliveryStore file: the same clip id runs both handlers; one namespace twice is a duplicate', async () => {
    const tmp = await tempDir();
    try {
      const file = tmp.file('deliveries.json');
      const store = FileDeliveryStore.shared({ file, clock: () => NOW });
      const a = receiverOn(store, SECRET_A, 'acct_a');
      const b = receiverOn(FileDeliveryStore.shared({ file, clock: () => NOW }), SECRET_B, 'acct_b');
      expect(await sendBoth(a, b)).toEqual([{ received: true }, { received: true }]);
      expect(a.seen.map((e) => e.id)).toEqual([777]);
      expect(b.seen.map((e) => e.id)).toEqual([777]);

      // The same namespace on the same store is the same account: the clip's event is a duplicate there.
      const again = receiverOn(store, SECRET_B, 'acct_a');
      const [, copy] = await sendBoth(receiverOn(store, SECRET_A, 'acct_c'), again);
      expect(copy).toEqual({ received: true, duplicate: true });
      expect(again.seen).toEqual([]);
      await a.receiver.close();
    } finally {
      await tmp.cleanup();
    }
  });

  it('without a namespace the keys are unchanged (e:<event>:<clip id>), so a store keeps its dedupe history', async () => {
    const store = new MemoryDeliveryStore({ clock: () => NOW });
    const a = receiverOn(store, SECRET_A);
    const b = receiverOn(store, SECRET_B);
    expect(await sendBoth(a, b)).toEqual([{ received: true }, { received: true, duplicate: true }]);
    expect(store.claim(['e:video.completed:777'], 1000, 'test')).toBe('processed');
    expect(store.claim(['acct_a:e:video.completed:777'], 1000, 'test')).toBe('claimed');
    expect(eventKey({ event: 'video.completed', id: 777 })).toBe('e:video.completed:777');
    expect(eventKey({ event: 'video.completed', id: 777 }, 'acct_a')).toBe('acct_a:e:video.completed:777');
  });

  it('the web receiver takes a namespace too', async () => {
    const store = new MemoryDeliveryStore({ clock: () => NOW });
    const a = createWebReceiver({ secret: SECRET_A, store, clock: () => NOW, namespace: 'acct_a' });
    const b = createWebReceiver({ secret: SECRET_B, store, clock: () => NOW, namespace: 'acct_b' });
    const event = completedEvent({ id: 9, delivered_at: iso(NOW) });
    const toA = signedRequest(event, { secret: SECRET_A });
    const toB = signedRequest(event, { secret: SECRET_B });
    expect(JSON.parse((await a.receive(new TextEncoder().encode(toA.body), toA.headers)).body)).toEqual({ received: true });
    expect(JSON.parse((await b.receive(new TextEncoder().encode(toB.body), toB.headers)).body)).toEqual({ received: true });
  });

  it('refuses a namespace that is empty, too long or outside [A-Za-z0-9._-] with a TypeError naming it', () => {
    const store = new MemoryDeliveryStore();
    for (const namespace of ['', 'a'.repeat(65), 'acct:a', 'acct/a', '../up', 'äccount', ' acct', 42, null]) {
      expect(() => createReceiver({ secret: SECRET_A, store, namespace: namespace as string })).toThrow(/`namespace`/);
      expect(() => createWebReceiver({ secret: SECRET_A, store, namespace: namespace as string })).toThrow(TypeError);
    }
    expect(() => createReceiver({ secret: SECRET_A, store, namespace: 'a'.repeat(64) })).not.toThrow();
    expect(() => createReceiver({ secret: SECRET_A, store, namespace: 'Acct-7.eu_1' })).not.toThrow();
  });

  it('keeps one reconcile cursor per namespace beside a file store; without one, the file it always had', async () => {
    const tmp = await tempDir();
    try {
      const file = tmp.file('deliveries.json');
      const store = FileDeliveryStore.shared({ file, clock: () => NOW });
      const a = receiverOn(store, SECRET_A, 'acct_a');
      const b = receiverOn(store, SECRET_B, 'acct_b');
      const plain = receiverOn(store, SECRET_A);
      expect(await a.receiver.reconcile({ ...reconcileWith, since: NOW - 60 * MIN })).toMatchObject({ handled: 1, cursor: iso(NOW - MIN) });
      // Account B's run starts where its own cursor is (none yet: 24 h back), not where A's got to, and
      // its clip 5 is not A's clip 5.
      expect(await b.receiver.reconcile(reconcileWith)).toMatchObject({ since: iso(NOW - 24 * 60 * MIN), handled: 1 });
      expect(await plain.receiver.reconcile(reconcileWith)).toMatchObject({ since: iso(NOW - 24 * 60 * MIN), handled: 1 });
      expect(JSON.parse(await readFile(`${file}.acct_a.reconcile.json`, 'utf8'))).toEqual({ version: 1, cursor: iso(NOW - MIN) });
      expect(JSON.parse(await readFile(`${file}.acct_b.reconcile.json`, 'utf8'))).toEqual({ version: 1, cursor: iso(NOW - MIN) });
      expect(JSON.parse(await readFile(`${file}.reconcile.json`, 'utf8'))).toEqual({ version: 1, cursor: iso(NOW - MIN) });
      expect([a.seen, b.seen, plain.seen].map((seen) => seen.map((e) => e.id))).toEqual([[5], [5], [5]]);
      await a.receiver.close();
    } finally {
      await tmp.cleanup();
    }
  });

  it('keeps one reconcile cursor per namespace on a memory store', async () => {
    const store = new MemoryDeliveryStore({ clock: () => NOW });
    const a = receiverOn(store, SECRET_A, 'acct_a');
    const b = receiverOn(store, SECRET_B, 'acct_b');
    await a.receiver.reconcile({ ...reconcileWith, since: NOW - 60 * MIN });
    expect(await receiverOn(store, SECRET_A, 'acct_a').receiver.reconcile(reconcileWith)).toMatchObject({ since: iso(NOW - MIN), duplicates: 0, checked: 0 });
    expect(await b.receiver.reconcile(reconcileWith)).toMatchObject({ since: iso(NOW - 24 * 60 * MIN), handled: 1 });
  });

  it.runIf(redis)('keeps one reconcile cursor per namespace on Redis (mark reconcile:<namespace>)', async () => {
    const store = new RedisDeliveryStore({ url: redis!.url, prefix: `ns${Date.now()}:` });
    try {
      const a = receiverOn(store, SECRET_A, 'acct_a');
      await a.receiver.reconcile({ ...reconcileWith, since: NOW - 60 * MIN });
      expect(await store.readMark('reconcile:acct_a')).toBe(NOW - MIN);
      expect(await store.readMark('reconcile')).toBeNull();
      expect(await receiverOn(store, SECRET_B, 'acct_b').receiver.reconcile(reconcileWith)).toMatchObject({ since: iso(NOW - 24 * 60 * MIN), handled: 1 });
    } finally {
      await store.close();
    }
  });

  describe('with an inbox beside the store', () => {
    /** Two accounts' receivers with `inbox` on one store: each keeps its own inbox and runs its own events only. */
    async function inboxesApart(storeOf: () => DeliveryStore, inbox: true | { redis: string; prefix: string }) {
      const make = (secret: string, namespace: string) => {
        const receiver = createReceiver({ secret, store: storeOf(), namespace, inbox });
        const seen: string[] = [];
        receiver.onAny((event) => void seen.push(`${namespace} ${event.id}`));
        return { receiver, seen };
      };
      const a = make(SECRET_A, 'acct_a');
      const b = make(SECRET_B, 'acct_b');
      try {
        const event = completedEvent({ id: 888 });
        for (const [side, secret, id] of [[a, SECRET_A, 'dlv_ia'], [b, SECRET_B, 'dlv_ib']] as const) {
          const request = signedRequest(event, { secret, deliveryId: id });
          expect((await side.receiver.receive(Buffer.from(request.body), request.headers)).status).toBe(202);
        }
        await Promise.all([a.receiver.inbox!.idle(), b.receiver.inbox!.idle()]);
        expect([a.seen, b.seen]).toEqual([['acct_a 888'], ['acct_b 888']]);
        return [a.receiver.inbox!.where, b.receiver.inbox!.where];
      } finally {
        await a.receiver.close();
        await b.receiver.close();
      }
    }

    it('on one FileDeliveryStore file: inbox.<namespace>.json each', async () => {
      const tmp = await tempDir();
      try {
        const file = tmp.file('deliveries.json');
        const where = await inboxesApart(() => FileDeliveryStore.shared({ file, clock: () => NOW }), true);
        expect(where).toEqual([tmp.file('inbox.acct_a.json'), tmp.file('inbox.acct_b.json')]);
      } finally {
        await tmp.cleanup();
      }
    });

    it('on one MemoryDeliveryStore: a memory inbox each', async () => {
      const store = new MemoryDeliveryStore();
      expect(await inboxesApart(() => store, true)).toEqual(['memory', 'memory']);
    });

    it.runIf(redis)('on one Redis: keys under <prefix><namespace>: each', async () => {
      const prefix = `nsinbox${Date.now()}:`;
      const store = new RedisDeliveryStore({ url: redis!.url, prefix: `${prefix}d:` });
      try {
        const where = await inboxesApart(() => store, { redis: redis!.url, prefix });
        expect(where.map((w) => w.slice(w.indexOf(prefix)))).toEqual([`${prefix}acct_a:)`, `${prefix}acct_b:)`]);
      } finally {
        await store.close();
      }
    });
  });
});
