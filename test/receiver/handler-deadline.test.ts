// Every handler has a deadline and an AbortSignal: with an inbox `inbox.handlerTimeout`, without one `leaseMs`,
// and `inbox.closeTimeout` while the receiver closes. A run past it fails, frees its slot and writes no
// second outcome when it ends late.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createReceiver, createTestWebhook, HandlerTimeoutError, MemoryDeliveryStore, WebhookHandlerError, type WebhookEvent } from '../../src/index.js';
import { SimulatedClock } from '../../src/service/core/clock.js';
import { SECRET, tempDir } from '../helpers/webhooks.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length) await cleanups.pop()!();
});

const send = async (receiver: ReturnType<typeof createReceiver>, hook = createTestWebhook('video.completed', { secret: SECRET })) => {
  const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
  return { status: reply.status, body: JSON.parse(reply.body) as Record<string, unknown>, hook };
};

describe('with an inbox: inbox.handlerTimeout', () => {
  it('a handler that never settles fails at its deadline (onError handler_timeout, signal aborted), frees its slot, and is retried', async () => {
    const clock = new SimulatedClock({ frozen: true });
    const now = () => clock.now();
    const receiver = createReceiver({ secret: SECRET, clock: now, store: new MemoryDeliveryStore({ clock: now }), inbox: { timers: clock, concurrency: 1, handlerTimeout: 30_000, minTimeout: 1_000 } });
    cleanups.push(() => receiver.close());
    const errors: unknown[] = [];
    receiver.onError((error) => void errors.push(error));
    const runs: Array<{ id: number; attempt: number; signal: AbortSignal }> = [];
    let hang = true;
    receiver.onAny((event: WebhookEvent, { attempt, signal }) => {
      runs.push({ id: event.id, attempt, signal });
      return hang ? new Promise<void>(() => undefined) : undefined;
    });
    const first = await send(receiver, createTestWebhook('video.completed', { secret: SECRET, now: clock.now() }));
    const second = await send(receiver, createTestWebhook('video.completed', { secret: SECRET, now: clock.now() }));
    expect([first.status, second.status]).toEqual([202, 202]);
    await receiver.inbox!.idle({ handlers: false });
    expect(runs.map((r) => r.id)).toEqual([first.hook.event.id]); // the one slot is held
    hang = false;
    await clock.advance(30_000);
    await receiver.inbox!.idle();
    // The hung run failed and freed its slot: the second event ran; the first waits for its retry.
    expect(runs.map((r) => r.id)).toEqual([first.hook.event.id, second.hook.event.id]);
    expect(runs[0]!.signal.aborted).toBe(true);
    expect(runs[0]!.signal.reason).toBeInstanceOf(HandlerTimeoutError);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(WebhookHandlerError);
    expect(errors[0]).toMatchObject({ code: 'handler_timeout', deliveryId: first.hook.deliveryId, cause: { code: 'handler_timeout', limit: 'handlerTimeout', ms: 30_000 } });
    const key = `e:video.completed:${first.hook.event.id}`;
    expect(await receiver.inbox!.get(key)).toMatchObject({ state: 'pending', attempts: 1, lastError: expect.stringContaining('inbox.handlerTimeout') });
    await clock.advance(1_000);
    await receiver.inbox!.idle();
    expect(runs.map((r) => [r.id, r.attempt])).toEqual([[first.hook.event.id, 1], [second.hook.event.id, 1], [first.hook.event.id, 2]]);
    expect(await receiver.inbox!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 2 });
  });

  it('checks handlerTimeout at construction, naming it; 5 minutes by default', async () => {
    const make = (handlerTimeout: unknown) => () => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { handlerTimeout: handlerTimeout as number } });
    for (const bad of [0, -1, Number.NaN, Infinity, 2 ** 31, '5m']) expect(make(bad)).toThrow(/`inbox.handlerTimeout` to be a positive number of milliseconds/);
    const clock = new SimulatedClock({ frozen: true });
    const now = () => clock.now();
    const receiver = createReceiver({ secret: SECRET, clock: now, store: new MemoryDeliveryStore({ clock: now }), inbox: { timers: clock } });
    cleanups.push(() => receiver.close());
    let signal!: AbortSignal;
    receiver.onAny((_event, context) => ((signal = context.signal), new Promise<void>(() => undefined)));
    receiver.onError(() => undefined);
    await send(receiver, createTestWebhook('video.completed', { secret: SECRET, now: clock.now() }));
    await receiver.inbox!.idle({ handlers: false });
    await clock.advance(5 * 60_000 - 1);
    expect(signal.aborted).toBe(false);
    await clock.advance(1);
    expect(signal.aborted).toBe(true);
  });
});

describe('without an inbox: leaseMs', () => {
  it('every handler gets a signal; one still running when its claim lapses fails (500, claim released), and its late end marks nothing', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), leaseMs: 10_000 });
    const errors: unknown[] = [];
    receiver.onError((error) => void errors.push(error));
    const runs: Array<{ signal: AbortSignal; finish: () => void }> = [];
    receiver.onAny((_event, { signal }) => new Promise<void>((resolve) => runs.push({ signal, finish: resolve })));
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    const first = send(receiver, hook);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await first).status).toBe(500);
    expect(runs[0]!.signal.reason).toMatchObject({ code: 'handler_timeout', limit: 'leaseMs', ms: 10_000 });
    expect(errors).toEqual([expect.objectContaining({ code: 'handler_timeout', deliveryId: hook.deliveryId })]);
    // The abandoned run ends late: no mark, so the sender's retry runs the event.
    runs[0]!.finish();
    await vi.advanceTimersByTimeAsync(0);
    const retry = send(receiver, hook);
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toHaveLength(2);
    runs[1]!.finish();
    expect(await retry).toMatchObject({ status: 200, body: { received: true } });
    expect((await send(receiver, hook)).body).toMatchObject({ duplicate: true });
    await receiver.close();
  });

  it('a synchronous handler gets a signal too, never aborted', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    let signal: AbortSignal | undefined;
    receiver.onAny((_event, context) => void (signal = context.signal));
    expect((await send(receiver)).status).toBe(200);
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal!.aborted).toBe(false);
  });
});

it('close() with a handler that never settles and holds nothing open returns after closeTimeout, aborting its signal; the process then exits 0', async () => {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const child = fileURLToPath(new URL('./handler-deadline.child.ts', import.meta.url));
  const proc = spawn(process.execPath, ['--import', 'tsx', child, tmp.file('')], { cwd: fileURLToPath(new URL('../../', import.meta.url)) });
  cleanups.push(() => void proc.kill('SIGKILL'));
  let out = '';
  let err = '';
  proc.stdout.on('data', (chunk: Buffer) => (out += chunk));
  proc.stderr.on('data', (chunk: Buffer) => (err += chunk));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  expect({ code, out, err }).toEqual({ code: 0, out: 'answered 202\naborted closeTimeout\nclosed\n', err: '' });
});
