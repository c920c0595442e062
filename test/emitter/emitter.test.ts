import { describe, expect, it } from 'vitest';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { RETRY_SCHEDULE_MS, verifySignature } from 'cliphook';
import { version } from '../../src/version.js';
import { backends, useBackend } from './backends.js';
import { answering, completedPayload, FakeClock, nextAttempt, settled, startReceiver, startServer } from './helpers.js';

const secret = 'whsec_test_emitter';
// Every test runs on the outbox and on BullMQ (Redis): the behaviour a sender sees is the same.
describe.each(await backends())('the emitter on $name', (backend) => {
  const { emitterFor, track } = useBackend(backend);

  describe('the retry schedule', () => {
    it('walks every slot at its exact time and fails after the 6th attempt, with one id and a valid signature each time', async () => {
      const clock = new FakeClock();
      const server = track(await answering(503));
      const emitter = emitterFor({ clock });
      await emitter.start();
      const failed: string[] = [];
      emitter.on('failed', (d) => void failed.push(d.id));

      const first = nextAttempt(emitter);
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      const t0 = clock.now();
      const times = [(await first)[1].at];
      let expected = t0;
      for (const delay of RETRY_SCHEDULE_MS) {
        const [delivery] = [emitter.get(sent.id)!];
        expect(delivery.state).toBe('pending');
        expected += delay;
        expect(delivery.nextAttemptAt).toBe(expected);
        const next = nextAttempt(emitter);
        await expect.poll(() => clock.timerCount).toBe(1); // the retry waits on one timer
        clock.advance(delay - 1);
        // Not a millisecond early: that timer has not fired.
        expect(clock.timerCount).toBe(1);
        expect(server.received).toHaveLength(times.length);
        clock.advance(1);
        times.push((await next)[1].at);
      }
      expect(times).toEqual([t0, t0 + 30_000, t0 + 150_000, t0 + 750_000, t0 + 2_550_000, t0 + 9_750_000]);
      const final = emitter.get(sent.id)!;
      expect(final.state).toBe('failed');
      expect(final.nextAttemptAt).toBeNull();
      expect(final.attempts.map((a) => a.status)).toEqual([503, 503, 503, 503, 503, 503]);
      expect(failed).toEqual([sent.id]);
      expect(clock.timerCount).toBe(0);

      expect(server.received).toHaveLength(6);
      const bodies = new Set<string>();
      for (const [i, request] of server.received.entries()) {
        expect(request.headers['x-service-delivery']).toBe(sent.id);
        expect(request.headers['x-service-event']).toBe('video.completed');
        expect(request.headers['content-type']).toBe('application/json');
        expect(request.headers['user-agent']).toBe(`cliphook/${version}`);
        expect(JSON.parse(request.body).delivered_at).toBe(new Date(times[i]!).toISOString());
        expect(verifySignature(request.body, request.headers['x-service-signature'], secret)).toBe(true);
        expect(await octokitVerify(secret, request.body, request.headers['x-service-signature'] as string)).toBe(true);
        bodies.add(request.body);
      }
      expect(bodies.size).toBe(6); // each attempt has its own delivered_at, so its own body and signature
    });

    it('delivers through our receiver after failures, and every attempt verifies there', async () => {
      const clock = new FakeClock();
      const receiver = track(await startReceiver(secret, () => clock.now(), (n) => (n < 2 ? 500 : null)));
      const emitter = emitterFor({ clock });
      await emitter.start();
      const sent = await emitter.send({ url: receiver.url, secret, event: 'video.completed', payload: completedPayload() });
      await nextAttempt(emitter);
      let next = nextAttempt(emitter);
      clock.advance(30_000);
      await next;
      next = nextAttempt(emitter);
      clock.advance(120_000);
      const [delivery, attempt] = await next;
      expect(attempt.status).toBe(200);
      expect(delivery.state).toBe('delivered');
      expect(receiver.handled).toHaveLength(1);
      expect(delivery.attempts.map((a) => a.status)).toEqual([500, 500, 200]);
      expect(attempt.response).toBe('{"received":true}');
    });

    it('takes a caller\'s own delivery id, and a second send with it enqueues nothing', async () => {
      const clock = new FakeClock();
      const receiver = track(await startReceiver(secret, () => clock.now()));
      const emitter = emitterFor({ clock });
      await emitter.start();
      const input = { url: receiver.url, secret, event: 'video.completed' as const, payload: completedPayload(), id: 'dlv_clip_42_done' };
      const [first, second] = await Promise.all([emitter.send(input), emitter.send(input)]);
      expect(first.id).toBe('dlv_clip_42_done');
      expect(second.id).toBe('dlv_clip_42_done');
      await settled(emitter, first.id);
      expect((await emitter.send(input)).state).toBe('delivered');
      expect(receiver.handled).toHaveLength(1);
      expect(emitter.list()).toHaveLength(1);
      await expect(emitter.send({ ...input, id: 'not-an-id' })).rejects.toThrow(/`id`/);
    });

    it('treats a 4xx as permanent: one attempt, no timer', async () => {
      const clock = new FakeClock();
      const server = track(await answering(410, '{"gone":true}'));
      const emitter = emitterFor({ clock });
      await emitter.start();
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      const done = await settled(emitter, sent.id);
      expect(done.state).toBe('failed');
      expect(done.attempts).toHaveLength(1);
      expect(done.attempts[0]).toMatchObject({ status: 410, error: null, response: '{"gone":true}' });
      clock.advance(10 * 3_600_000);
      expect(server.received).toHaveLength(1);
      expect(clock.timerCount).toBe(0);
    });

    it('never follows a redirect and retries it', async () => {
      const clock = new FakeClock();
      const target = track(await answering(200));
      const server = track(await answering(302, '', { location: target.url }));
      const emitter = emitterFor({ clock });
      await emitter.start();
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      const [delivery, attempt] = await nextAttempt(emitter);
      expect(attempt.status).toBe(302);
      expect(delivery.state).toBe('pending');
      expect(delivery.nextAttemptAt).toBe(clock.now() + 30_000);
      const next = nextAttempt(emitter);
      clock.advance(30_000);
      expect((await next)[1].status).toBe(302);
      expect(target.received).toHaveLength(0);
      expect(emitter.get(sent.id)!.attempts).toHaveLength(2);
    });

    it('counts a receiver that does not answer within timeoutMs as a timeout, and retries it', async () => {
      const clock = new FakeClock();
      let hang = true;
      const server = track(await startServer((_req, res) => {
        if (!hang) res.end('ok');
      }));
      const emitter = emitterFor({ clock, timeoutMs: 5_000 });
      await emitter.start();
      const attempted = nextAttempt(emitter);
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      await expect.poll(() => server.received.length).toBe(1);
      clock.advance(5_000);
      const [delivery, attempt] = await attempted;
      expect(attempt).toMatchObject({ status: null, error: 'timeout after 5000 ms', latencyMs: 5_000 });
      expect(delivery.state).toBe('pending');
      hang = false;
      const next = nextAttempt(emitter);
      clock.advance(30_000);
      expect((await next)[1].status).toBe(200);
      expect(emitter.get(sent.id)!.state).toBe('delivered');
    });

    it('retries a connection error on the schedule', async () => {
      const clock = new FakeClock();
      const closed = await answering(200);
      await closed.close();
      const emitter = emitterFor({ clock });
      await emitter.start();
      const attempted = nextAttempt(emitter);
      await emitter.send({ url: closed.url, secret, event: 'video.completed', payload: completedPayload() });
      const [delivery, attempt] = await attempted;
      expect(attempt.status).toBeNull();
      expect(attempt.error).toMatch(/ECONNREFUSED/);
      expect(delivery.state).toBe('pending');
    });
  });

  describe('p-retry inside one attempt', () => {
    it('retries a connection reset before any response at once, inside the same attempt', async () => {
      let n = 0;
      const server = track(await startServer((req, res) => {
        if (n++ === 0) return void req.socket.destroy(); // reset before any status
        res.end('ok');
      }));
      const emitter = emitterFor({ clock: new FakeClock() });
      await emitter.start();
      const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      const done = await settled(emitter, sent.id);
      expect(done.state).toBe('delivered');
      expect(done.attempts).toHaveLength(1);
      expect(server.received).toHaveLength(2);
      // The quick retry re-sends the same signed bytes: it is the same attempt.
      expect(server.received[1]!.body).toBe(server.received[0]!.body);
    });

    it('gives up within the attempt after three tries, and leaves the rest to the schedule', async () => {
      const server = track(await startServer((req) => void req.socket.destroy()));
      const emitter = emitterFor({ clock: new FakeClock() });
      await emitter.start();
      const attempted = nextAttempt(emitter);
      await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      const [delivery, attempt] = await attempted;
      expect(attempt.status).toBeNull();
      expect(attempt.error).toMatch(/ECONNRESET|socket hang up/);
      expect(server.received).toHaveLength(3);
      expect(delivery.state).toBe('pending');
    });

    it('never retries inside an attempt once a status came back', async () => {
      const server = track(await answering(502));
      const emitter = emitterFor({ clock: new FakeClock() });
      await emitter.start();
      const attempted = nextAttempt(emitter);
      await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
      expect((await attempted)[1].status).toBe(502);
      expect(server.received).toHaveLength(1);
    });
  });

  describe('one timer for every scheduled delivery', () => {
    it('keeps a single timer for 200 deliveries waiting for their retries, and fires them in order', async () => {
      const clock = new FakeClock();
      const server = track(await answering(500));
      const emitter = emitterFor({ clock, concurrency: 8 });
      await emitter.start();
      let attempts = 0;
      emitter.on('attempt', () => void attempts++);
      const sendBatch = (from: number) => Promise.all(Array.from({ length: 100 }, (_, i) =>
        emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload(from + i) })));
      await sendBatch(1); // fails at t0: due at t0 + 30 s
      await expect.poll(() => attempts, { timeout: 15_000 }).toBe(100);
      clock.advance(1_000);
      await sendBatch(101); // fails at t0 + 1 s: due at t0 + 31 s
      await expect.poll(() => attempts, { timeout: 15_000 }).toBe(200);
      expect(emitter.stats.pending).toBe(200);
      expect(clock.timerCount).toBe(1);
      clock.advance(29_000); // the first batch is due, the second is not
      await expect.poll(() => attempts, { timeout: 15_000 }).toBe(300);
      expect(clock.timerCount).toBe(1);
      const seen = server.received.slice(200).map((r) => JSON.parse(r.body).id as number);
      expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      clock.advance(1_000);
      await expect.poll(() => attempts, { timeout: 15_000 }).toBe(400);
    });

    it('never has more than `concurrency` attempts in flight', async () => {
      let open = 0;
      let most = 0;
      const held: (() => void)[] = [];
      const server = track(await startServer((_req, res) => {
        open++;
        most = Math.max(most, open);
        held.push(() => {
          open--;
          res.end();
        });
      }));
      // One destination here, so its own cap must not be the lower one.
      const emitter = emitterFor({ concurrency: 3, maxPerDestination: 3 });
      await emitter.start();
      const sent = await Promise.all(Array.from({ length: 10 }, (_, i) =>
        emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload(i + 1) })));
      let delivered = 0;
      emitter.on('delivered', () => void delivered++);
      while (delivered < 10) {
        await expect.poll(() => held.length + delivered >= Math.min(10, delivered + 1)).toBe(true);
        held.shift()?.();
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(most).toBe(3);
      expect(sent.map((d) => emitter.get(d.id)!.state)).toEqual(new Array(10).fill('delivered'));
    });
  });
});
