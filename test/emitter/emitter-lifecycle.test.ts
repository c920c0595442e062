import { describe, expect, it } from 'vitest';
import { createEmitter, MemoryOutbox, InvalidCallbackUrlError, DeliveryNotFoundError, EmitterStateError } from 'cliphook';
import { backends, useBackend } from './backends.js';
import { answering, completedPayload, FakeClock, nextAttempt, settled, useEmitters } from './helpers.js';

const secret = 'whsec_test_emitter';

// These run on the outbox and on BullMQ (Redis): the behaviour a sender sees is the same.
describe.each(await backends())('the emitter on $name', (backend) => {
  const { emitterFor, track } = useBackend(backend);

  describe('redelivery and recovery', () => {
    it('redelivers with the same id and a fresh delivered_at, on a fresh schedule', async () => {
      const clock = new FakeClock();
      const server = track(await answering(400));
      const emitter = emitterFor({ clock });
      await emitter.start();
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      await settled(emitter, sent.id);
      clock.advance(60_000);
      const again = nextAttempt(emitter);
      await emitter.redeliver(sent.id);
      const [delivery] = await again;
      expect(delivery.attempts).toHaveLength(2);
      expect(server.received.map((r) => r.headers['x-service-delivery'])).toEqual([sent.id, sent.id]);
      const [a, b] = server.received.map((r) => JSON.parse(r.body).delivered_at as string);
      expect(Date.parse(b!) - Date.parse(a!)).toBe(60_000);
      await expect(emitter.redeliver('dlv_nope')).rejects.toBeInstanceOf(DeliveryNotFoundError);
    });

    it('sends once when redeliver() is called twice at once, and each later slot once', async () => {
      const clock = new FakeClock();
      const calls: number[] = [];
      let status = 400;
      const emitter = emitterFor({ clock, fetch: async () => (calls.push(clock.now()), new Response('', { status })) });
      await emitter.start();
      const sent = await emitter.send({ url: 'https://example.com/hook', secret, event: 'video.completed', payload: completedPayload() });
      await settled(emitter, sent.id);
      status = 500;
      calls.length = 0;
      const attempted = nextAttempt(emitter);
      await Promise.all([emitter.redeliver(sent.id, { retry: true }), emitter.redeliver(sent.id, { retry: true })]);
      await attempted;
      expect(calls).toHaveLength(1);
      expect(emitter.stats.pending).toBe(1);
      const start = calls[0]!;
      for (const slot of [30_000, 120_000]) {
        const next = nextAttempt(emitter);
        clock.advance(slot);
        await next;
      }
      expect(calls.map((at) => at - start)).toEqual([0, 30_000, 150_000]);
      expect(emitter.get(sent.id)!.attempts).toHaveLength(4);
      expect(emitter.stats.pending).toBe(1);
    });

    it('lets attempts in flight finish on stop, and keeps scheduled ones for the next start', async () => {
      const clock = new FakeClock();
      const place = backend.place();
      const failing = track(await answering(503));
      const first = emitterFor({ clock }, place);
      await first.start();
      const attempted = nextAttempt(first);
      const sent = await first.send({ url: failing.url, secret, event: 'video.completed', payload: completedPayload() });
      await attempted;
      await first.stop();
      expect(clock.timerCount).toBe(0);
      await expect(first.send({ url: failing.url, secret, event: 'video.completed', payload: completedPayload() })).rejects.toBeInstanceOf(EmitterStateError);

      const second = emitterFor({ clock }, place);
      await second.start();
      expect(second.get(sent.id)).toMatchObject({ state: 'pending', nextAttemptAt: clock.now() + 30_000 });
      const next = nextAttempt(second);
      clock.advance(30_000);
      expect((await next)[0].attempts).toHaveLength(2);
    });

    it('forgets the oldest finished deliveries past retainFinished', async () => {
      const server = track(await answering(200));
      const place = backend.place();
      const emitter = emitterFor({ retainFinished: 2 }, place);
      await emitter.start();
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload(i + 1) });
        await settled(emitter, sent.id);
        ids.push(sent.id);
      }
      await expect.poll(() => backend.stored(place)).toBe(2);
      expect(emitter.list().map((d) => d.id)).toEqual([ids[3], ids[2]]);
      expect(emitter.get(ids[0]!)).toBeUndefined();
    });

    it('with retainFinished 0, forgets a delivery as it finishes, in its store too', async () => {
      const server = track(await answering(200));
      const place = backend.place();
      const emitter = emitterFor({ retainFinished: 0 }, place);
      await emitter.start();
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      expect((await settled(emitter, sent.id)).state).toBe('delivered'); // listeners still hear it
      await emitter.stop();
      expect(await backend.stored(place)).toBe(0);
      expect(emitter.get(sent.id)).toBeUndefined();
    });
  });

  describe('send() and options', () => {
    it('refuses a bad URL with a typed error, stores nothing and loses nothing already stored', async () => {
      const place = backend.place();
      // No request leaves the machine: the one accepted delivery goes to this fetch.
      const emitter = emitterFor({ allowPrivateNetworks: false, fetch: async () => new Response('ok') }, place);
      await emitter.start();
      const base = { secret, event: 'video.completed' as const, payload: completedPayload() };
      const kept = await emitter.send({ ...base, url: 'https://hooks.example.com/webhooks' });
      for (const url of ['http://example.com/hook', 'https://user:pw@example.com/', 'https://127.0.0.1/', 'https://[::1]/', `https://example.com/${'a'.repeat(2048)}`, 'not a url']) {
        const error = await emitter.send({ ...base, url }).catch((e: unknown) => e);
        expect(error, url).toBeInstanceOf(InvalidCallbackUrlError);
        expect((error as InvalidCallbackUrlError).code).toBe('invalid_callback_url');
      }
      expect(await backend.stored(place)).toBe(1);
      expect((await settled(emitter, kept.id)).state).toBe('delivered');
    });

    it('checks the payload against spec 2.12 when it is sent', async () => {
      const emitter = emitterFor();
      await emitter.start();
      const url = 'http://127.0.0.1:9/';
      await expect(emitter.send({ url, secret, event: 'video.completed', payload: { ...completedPayload(), credits_used: 'many' } }))
        .rejects.toMatchObject({ code: 'invalid_payload', field: 'credits_used' });
      await expect(emitter.send({ url, secret: '', event: 'video.completed', payload: completedPayload() })).rejects.toThrow(/`secret`/);
      await expect(emitter.send({ url, secret, event: 'video.failed', payload: { event: 'video.completed' } })).rejects.toThrow(/payload.event/);
    });

    it('needs start() before send()', async () => {
      const emitter = emitterFor();
      expect(() => emitter.list()).not.toThrow();
      await expect(emitter.send({ url: 'http://127.0.0.1:9/', secret, event: 'video.completed', payload: completedPayload() }))
        .rejects.toMatchObject({ code: 'emitter_not_started' });
    });

    it('keeps the first 1 KiB of a response without splitting a multi-byte character', async () => {
      const emitter = emitterFor({ fetch: async () => new Response(`ab${'€'.repeat(400)}`, { status: 200 }) });
      await emitter.start();
      const sent = await emitter.send({ url: 'https://example.com/hook', secret, event: 'video.completed', payload: completedPayload() });
      const done = await settled(emitter, sent.id);
      // 2 + 340 × 3 bytes = 1022: the 341st euro sign would need 1025.
      expect(done.attempts[0]!.response).toBe(`ab${'€'.repeat(340)}`);
    });

    it.each(['https://@example.com/hook', 'https://:@example.com/hook'])('stores %s without its empty credentials', async (url) => {
      const urls: string[] = [];
      const emitter = emitterFor({ fetch: async (to) => (urls.push(to), new Response('', { status: 200 })) });
      await emitter.start();
      const sent = await emitter.send({ url, secret, event: 'video.completed', payload: completedPayload() });
      expect(sent.url).toBe('https://example.com/hook');
      await settled(emitter, sent.id);
      expect(urls).toEqual(['https://example.com/hook']);
    });

    it('sends through an injected fetch, with redirect: manual', async () => {
      const calls: RequestInit[] = [];
      const emitter = emitterFor({
        fetch: async (_url, init) => {
          calls.push(init);
          return new Response('x'.repeat(5000), { status: 201 });
        },
      });
      await emitter.start();
      const sent = await emitter.send({ url: 'https://example.com/hook', secret, event: 'video.completed', payload: completedPayload() });
      const done = await settled(emitter, sent.id);
      expect(done.state).toBe('delivered');
      expect(done.attempts[0]!.response).toHaveLength(1024);
      expect(calls[0]!.redirect).toBe('manual');
    });
  });
});

describe('the emitter on an outbox', () => {
  const { emitterFor, track } = useEmitters();

  it('leaves a delivery as it was when the outbox cannot save its redelivery', async () => {
    class FlakyOutbox extends MemoryOutbox {
      failNext = false;
      override async save(record: Parameters<MemoryOutbox['save']>[0]): Promise<void> {
        if (this.failNext) {
          this.failNext = false;
          throw new Error('disk full');
        }
        return super.save(record);
      }
    }
    const store = new FlakyOutbox();
    const clock = new FakeClock();
    let status = 400;
    const emitter = emitterFor({ store, clock, fetch: async () => new Response('', { status }) });
    await emitter.start();
    const failed = await emitter.send({ url: 'https://example.com/hook', secret, event: 'video.completed', payload: completedPayload() });
    await settled(emitter, failed.id);
    store.failNext = true;
    await expect(emitter.redeliver(failed.id)).rejects.toThrow('disk full');
    expect(emitter.get(failed.id)).toMatchObject({ state: 'failed', nextAttemptAt: null, attempts: [{ status: 400 }] });
    expect(emitter.stats.pending).toBe(0);

    // A scheduled one keeps its slot.
    status = 503;
    const scheduled = await emitter.send({ url: 'https://example.com/hook', secret, event: 'video.completed', payload: completedPayload(2) });
    await nextAttempt(emitter);
    const slot = emitter.get(scheduled.id)!.nextAttemptAt;
    store.failNext = true;
    await expect(emitter.redeliver(scheduled.id, { retry: false })).rejects.toThrow('disk full');
    expect(emitter.get(scheduled.id)).toMatchObject({ state: 'pending', nextAttemptAt: slot, retry: true });
    expect(emitter.stats.pending).toBe(1);

    status = 200;
    const again = nextAttempt(emitter);
    await emitter.redeliver(failed.id);
    await again;
    expect(emitter.get(failed.id)!.state).toBe('delivered');
  });

  it('resumes, on start, an attempt that was in flight when the process died', async () => {
    const store = new MemoryOutbox();
    const server = track(await answering(200));
    const crashed = {
      id: 'dlv_inflight', url: server.url, secret, event: 'video.completed' as const, state: 'delivering' as const, retry: true,
      createdAt: Date.now(), nextAttemptAt: null, round: 0, attempts: [],
      payload: JSON.stringify({ event: 'video.completed', ...completedPayload() }),
    };
    await store.save(crashed);
    const emitter = emitterFor({ store });
    const delivered = new Promise((resolve) => emitter.on('delivered', resolve));
    await emitter.start();
    await delivered;
    expect(server.received[0]!.headers['x-service-delivery']).toBe('dlv_inflight');
    expect(emitter.get('dlv_inflight')!.state).toBe('delivered');
  });

  it('checks a stored URL again on every attempt, so a laxer emitter\'s record cannot slip through', async () => {
    const store = new MemoryOutbox();
    const server = track(await answering(200));
    await store.save({
      id: 'dlv_lax', url: server.url, secret, event: 'video.completed', state: 'pending', retry: true,
      createdAt: Date.now(), nextAttemptAt: Date.now(), round: 0, attempts: [],
      payload: JSON.stringify({ event: 'video.completed', ...completedPayload() }),
    });
    const emitter = emitterFor({ store, allowPrivateNetworks: false });
    const failed = new Promise((resolve) => emitter.on('failed', resolve));
    await emitter.start();
    await failed;
    expect(emitter.get('dlv_lax')!.attempts[0]!.error).toMatch(/^invalid_callback_url: .*https/);
    expect(server.received).toHaveLength(0);
  });

  it.each([
    [{ timeoutMs: 0 }, /`timeoutMs`/],
    [{ timeoutMs: 2 ** 31 }, /`timeoutMs`.*2147483647/], // a longer timer fires at once: every attempt would time out
    [{ timeoutMs: 3e9 }, /`timeoutMs`/],
    [{ concurrency: 1.5 }, /`concurrency`/],
    [{ allowPrivateNetworks: 'yes' }, /`allowPrivateNetworks`/],
    [{ retrySchedule: [-1] }, /`retrySchedule`/],
    [{ retainFinished: -1 }, /`retainFinished`/],
    [{ clock: { now: () => 0 } }, /`clock`/],
    [{ logger: {} }, /`logger`/],
    [{ store: {} }, /`store`/],
    [{ fetch: 'no' }, /`fetch`/],
  ])('throws a TypeError naming the option for %o', (options, message) => {
    expect(() => createEmitter({ store: new MemoryOutbox(), ...(options as object) })).toThrow(TypeError);
    expect(() => createEmitter({ store: new MemoryOutbox(), ...(options as object) })).toThrow(message);
  });

  it('leaves the default outbox free when an option is refused, so a later createEmitter() works (issue 10)', async () => {
    // Without a store: the default file outbox must not be opened before the options are checked.
    expect(() => createEmitter({ timeoutMs: 0 })).toThrow(/`timeoutMs`/);
    expect(() => createEmitter({ concurrency: 0 })).toThrow(/`concurrency`/);
    const emitter = createEmitter({});
    await emitter.stop(); // never started: nothing is read or written
    await createEmitter().stop();
  });

});
