import { describe, expect, it } from 'vitest';
import { createEmitter, MemoryOutbox, verifySignature, type DeliveryRecord, type EmitterOptions, type Transport, type TransportReply, type TransportRequest } from 'cliphook';
import { backends, useBackend } from './backends.js';
import { answering, completedPayload, FakeClock, settled } from './helpers.js';

const secret = 'whsec_test_attempt_hooks';

// Issue 31 item 5: the hooks the local service used through symbol keys are public options, on every backend.
describe.each(await backends())('the attempt hooks on $name', (backend) => {
  const { emitterFor, track } = useBackend(backend);

  it('wrapTransport: every request goes through the wrapper, which may change it and sees the reply', async () => {
    const server = track(await answering(200, 'ok'));
    const seen: Array<{ request: TransportRequest; reply: TransportReply }> = [];
    const wrapTransport = (next: Transport): Transport => async (request) => {
      const reply = await next({ ...request, headers: { ...request.headers, 'x-wrapped': 'yes' } });
      seen.push({ request, reply });
      return reply;
    };
    const emitter = emitterFor({ wrapTransport });
    await emitter.start();
    const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
    const done = await settled(emitter, sent.id);
    expect(done.state).toBe('delivered');
    expect(server.received).toHaveLength(1);
    expect(server.received[0]!.headers['x-wrapped']).toBe('yes');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.request.url.href).toBe(server.url);
    expect(seen[0]!.request.headers['x-service-delivery']).toBe(sent.id);
    expect(seen[0]!.reply.status).toBe(200);
    expect(seen[0]!.reply.body.toString()).toBe('ok');
  });

  it('wrapTransport: a reply the wrapper makes up is the attempt’s outcome, and nothing reaches the network', async () => {
    const server = track(await answering(200));
    const emitter = emitterFor({ wrapTransport: () => async () => ({ status: 410, body: Buffer.from('gone') }) });
    await emitter.start();
    const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
    const done = await settled(emitter, sent.id);
    expect(done.state).toBe('failed');
    expect(done.attempts.map((a) => [a.status, a.response])).toEqual([[410, 'gone']]);
    expect(server.received).toHaveLength(0);
  });

  it('deliveredAt: each attempt’s delivered_at and its recorded time are the hook’s, signed; undefined keeps the clock’s', async () => {
    const clock = new FakeClock();
    const server = track(await answering(503));
    const told: Array<{ id: string; attempts: number }> = [];
    const ahead = Date.parse('2030-01-01T00:00:00Z');
    const deliveredAt: EmitterOptions['deliveredAt'] = (record: Readonly<DeliveryRecord>) => {
      told.push({ id: record.id, attempts: record.attempts.length });
      return told.length === 1 ? ahead : undefined;
    };
    const emitter = emitterFor({ clock, deliveredAt, retrySchedule: [1000] });
    await emitter.start();
    const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
    await expect.poll(() => emitter.get(sent.id)!.attempts.length).toBe(1);
    await expect.poll(() => clock.timerCount).toBe(1);
    clock.advance(1000);
    const done = await settled(emitter, sent.id);
    expect(told).toEqual([{ id: sent.id, attempts: 0 }, { id: sent.id, attempts: 1 }]);
    expect(done.attempts.map((a) => a.at)).toEqual([ahead, clock.now()]);
    const bodies = server.received.map((request) => JSON.parse(request.body) as { delivered_at: string });
    expect(bodies.map((body) => body.delivered_at)).toEqual([new Date(ahead).toISOString(), new Date(clock.now()).toISOString()]);
    for (const request of server.received) expect(verifySignature(request.body, request.headers['x-service-signature'], secret)).toBe(true);
  });

  it('a hook that fails fails that attempt with its reason, retried on the schedule, and the next attempt goes out', async () => {
    const clock = new FakeClock();
    const server = track(await answering(200));
    let calls = 0;
    const deliveredAt = () => (++calls === 1 ? Number.NaN : undefined);
    const wrapTransport = (next: Transport): Transport => async (request) => (calls === 2 ? ({ status: '200' } as unknown as TransportReply) : next(request));
    const emitter = emitterFor({ clock, deliveredAt, wrapTransport, retrySchedule: [1000, 1000] });
    await emitter.start();
    const sent = await emitter.send({ url: server.url, secret, event: 'video.completed', payload: completedPayload() });
    for (const attempts of [1, 2]) {
      await expect.poll(() => emitter.get(sent.id)!.attempts.length).toBe(attempts);
      await expect.poll(() => clock.timerCount).toBe(1);
      clock.advance(1000);
    }
    const done = await settled(emitter, sent.id);
    expect(done.attempts.map((a) => [a.status, a.error])).toEqual([
      [null, 'Expected `deliveredAt` to return milliseconds since the epoch or undefined, got NaN.'],
      [null, 'Expected the transport (`wrapTransport`) to resolve to { status: an integer, body: a Buffer }.'],
      [200, null],
    ]);
    expect(server.received).toHaveLength(1);
  });
});

describe('the attempt hooks’ checks', () => {
  it('refuses a wrapTransport that returns no transport when the emitter is made', () => {
    expect(() => createEmitter({ store: new MemoryOutbox(), wrapTransport: () => undefined as unknown as Transport })).toThrow(
      new TypeError('Expected `wrapTransport` to return a transport function, got undefined.'),
    );
  });

  it('leaves the default outbox free when wrapTransport is refused, so a later createEmitter() works (issue 10)', async () => {
    expect(() => createEmitter({ wrapTransport: () => 'no' as unknown as Transport })).toThrow(/`wrapTransport`/);
    expect(() => createEmitter({ wrapTransport: () => { throw new Error('broken wrapper'); } })).toThrow('broken wrapper');
    await createEmitter().stop(); // never started: nothing is read or written
  });

  it.each([
    [{ wrapTransport: 'no' }, 'Expected `wrapTransport` to be a function, got string.'],
    [{ deliveredAt: 1 }, 'Expected `deliveredAt` to be a function, got number.'],
  ])('throws a TypeError naming the option for %o', (options, message) => {
    expect(() => createEmitter({ store: new MemoryOutbox(), ...(options as object) })).toThrow(new TypeError(message));
  });
});
