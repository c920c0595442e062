// Issue 30 item 1: the receiver with a durable inbox, in-process, on the simulated clock.
import { writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createReceiver, createTestWebhook, FileDeliveryStore, InboxError, MemoryDeliveryStore, type WebhookContext, type WebhookEvent } from '../../../src/index.js';
import { FileInboxBackend } from '../../../src/receiver/inbox/file-backend.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { flushPromises } from '../../helpers/flush.js';
import { SECRET, tempDir } from '../../helpers/webhooks.js';

interface Hook {
  body: string;
  headers: Record<string, string>;
  deliveryId: string;
  event: WebhookEvent;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An event's inbox record id: its event key. */
const keyOf = (hook: { event: WebhookEvent }) => `e:${hook.event.event}:${hook.event.id}`;

async function setup(inbox: Record<string, unknown> = {}, options: { limit?: number } = {}) {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const clock = new SimulatedClock({ frozen: true });
  const file = tmp.file('inbox.json');
  const make = (extra: Record<string, unknown> = {}) => {
    const receiver = createReceiver({ ...options, secret: SECRET, store: new MemoryDeliveryStore({ clock: () => clock.now() }), clock: () => clock.now(), inbox: { file, timers: clock, ...inbox, ...extra } });
    cleanups.push(() => receiver.close());
    return receiver;
  };
  const receiver = make();
  const errors: unknown[] = [];
  receiver.onError((error) => void errors.push(error));
  const send = async (hook: Hook = createTestWebhook('video.completed', { secret: SECRET, now: clock.now() })) => {
    const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
    return { status: reply.status, headers: reply.headers, body: JSON.parse(reply.body) as Record<string, unknown>, hook };
  };
  return { clock, receiver, send, errors, file, make };
}


describe('receiver inbox', () => {
  it('answers 202 before the handler runs, then runs it once from the inbox with attempt 1 and source webhook', async () => {
    const { receiver, send } = await setup();
    let release!: () => void;
    const seen: WebhookContext[] = [];
    receiver.onAny((_event, context) => {
      seen.push(context);
      return new Promise<void>((resolve) => (release = resolve));
    });
    const reply = await send();
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ received: true, queued: true });
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(await receiver.inbox!.stats()).toMatchObject({ running: 1 });
    release();
    await vi.waitFor(async () => expect(await receiver.inbox!.stats()).toMatchObject({ running: 0, done: 1 }));
    expect(seen[0]).toMatchObject({ attempt: 1, source: 'webhook', deliveryId: reply.hook.deliveryId });
    expect(Buffer.from(seen[0]!.rawBody).toString()).toBe(reply.hook.body);
  });

  it('a second delivery of a queued event is a duplicate and never runs the handler', async () => {
    const { receiver, send } = await setup();
    const handler = vi.fn();
    receiver.onAny(handler);
    const first = await send();
    const again = await send(first.hook);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true });
    await receiver.inbox!.idle();
    expect(await receiver.inbox!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 1 });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('retries a failing handler with p-retry backoff on the injected clock, then succeeds: attempts 1, 2, 3', async () => {
    const { receiver, send, clock, errors } = await setup({ minTimeout: 1000, factor: 2 });
    const attempts: number[] = [];
    receiver.onAny((_event, { attempt }) => {
      attempts.push(attempt);
      if (attempt < 3) throw new Error(`boom ${attempt}`);
    });
    const { hook } = await send();
    await receiver.inbox!.idle();
    expect(attempts).toEqual([1]);
    expect(await receiver.inbox!.get(keyOf(hook))).toMatchObject({ state: 'pending', attempts: 1, lastError: 'boom 1', nextAttemptAt: clock.now() + 1000 });
    await clock.advance(999);
    await receiver.inbox!.idle();
    expect(attempts).toEqual([1]);
    await clock.advance(1);
    await receiver.inbox!.idle();
    expect(attempts).toEqual([1, 2]);
    // The second wait is minTimeout × factor.
    await clock.advance(1999);
    await receiver.inbox!.idle();
    expect(attempts).toEqual([1, 2]);
    await clock.advance(1);
    await receiver.inbox!.idle();
    expect(await receiver.inbox!.get(keyOf(hook))).toMatchObject({ state: 'done', attempts: 3, lastError: null });
    expect(attempts).toEqual([1, 2, 3]);
    expect(errors).toHaveLength(2);
  });

  it('keeps a handler that always fails as dead after retries + 1 runs, and replay runs it again with source replay', async () => {
    const { receiver, send, clock } = await setup({ retries: 2, minTimeout: 10, maxTimeout: 10 });
    let fixed = false;
    const runs: Array<Pick<WebhookContext, 'attempt' | 'source'>> = [];
    receiver.onAny((_event, { attempt, source }) => {
      runs.push({ attempt, source });
      if (!fixed) throw new Error('bug');
    });
    const { hook } = await send();
    for (let i = 0; i < 3; i++) {
      await receiver.inbox!.idle();
      expect(runs).toHaveLength(i + 1);
      await clock.advance(10);
    }
    await receiver.inbox!.idle();
    expect(await receiver.inbox!.get(keyOf(hook))).toMatchObject({ state: 'dead', attempts: 3, lastError: 'bug' });
    await clock.advance(60_000);
    await receiver.inbox!.idle();
    expect(runs).toHaveLength(3);
    expect((await receiver.inbox!.list({ state: 'dead' })).map((r) => [r.id, r.deliveryId])).toEqual([[keyOf(hook), hook.deliveryId]]);
    fixed = true;
    await receiver.inbox!.replay(keyOf(hook));
    await vi.waitFor(async () => expect(await receiver.inbox!.get(keyOf(hook))).toMatchObject({ state: 'done', source: 'replay', attempts: 1 }));
    expect(runs.at(-1)).toEqual({ attempt: 1, source: 'replay' });
    await expect(receiver.inbox!.replay('dlv_nope')).rejects.toBeInstanceOf(InboxError);
  });

  it('past maxPending answers 503 inbox_full with Retry-After and releases the claim, so the retry is taken, not a duplicate', async () => {
    const { receiver, send } = await setup({ maxPending: 2, concurrency: 1 });
    const releases: Array<() => void> = [];
    const handled: number[] = [];
    receiver.onAny((event: WebhookEvent) => new Promise<void>((resolve) => releases.push(() => (handled.push(event.id), resolve()))));
    const a = await send();
    const b = await send();
    const c = await send();
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(c.status).toBe(503);
    expect(c.body).toMatchObject({ code: 'inbox_full', retryable: true });
    expect(c.headers['retry-after']).toBe('30');
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    releases.shift()!();
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    const retry = await send(c.hook);
    expect(retry.status).toBe(202);
    while (handled.length < 3) {
      await vi.waitFor(() => expect(releases.length).toBeGreaterThan(0));
      releases.shift()!();
    }
    expect(handled.sort()).toEqual([a.hook.event.id, b.hook.event.id, c.hook.event.id].sort());
  });

  it('past maxPendingBytes answers 503 inbox_full with Retry-After and releases the claim; a finished event frees its bytes', async () => {
    // Issue 30 follow-up item 1: test webhooks are ~391 bytes, so two fit in 1000 and a third does not.
    const { receiver, send, make } = await setup({ maxPendingBytes: 1000, concurrency: 1 }, { limit: 1000 });
    const releases: Array<() => void> = [];
    const handled: number[] = [];
    receiver.onAny((event: WebhookEvent) => new Promise<void>((resolve) => releases.push(() => (handled.push(event.id), resolve()))));
    const a = await send();
    const b = await send();
    const c = await send();
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(Buffer.byteLength(a.hook.body) + Buffer.byteLength(b.hook.body)).toBeLessThanOrEqual(1000);
    expect(c.status).toBe(503);
    expect(c.body).toMatchObject({ code: 'inbox_full', retryable: true });
    expect(c.headers['retry-after']).toBe('30');
    expect(await receiver.inbox!.stats()).toEqual({ pending: 1, running: 1, dead: 0, done: 0 });
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    releases.shift()!();
    await vi.waitFor(() => expect(releases).toHaveLength(1));
    const retry = await send(c.hook);
    expect(retry.status).toBe(202);
    while (handled.length < 3) {
      await vi.waitFor(() => expect(releases.length).toBeGreaterThan(0));
      releases.shift()!();
    }
    expect(handled.sort()).toEqual([a.hook.event.id, b.hook.event.id, c.hook.event.id].sort());
    // A budget below the largest body accepted would refuse that body forever.
    expect(() => make({ file: undefined, maxPendingBytes: 999 })).toThrow(/`inbox.maxPendingBytes` \(999\) to be at least `limit` \(1000\)/);
  });

  it('a corrupt inbox file answers every request 503 store_unavailable, and its one-line error names the file and what to do', async () => {
    // Issue 30 follow-up item 2: the file holds acknowledged events, so it is neither moved aside nor ignored.
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    await writeFile(file, '{"version":1,"records":[{"id":"d1","bo');
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file } });
    cleanups.push(() => receiver.close());
    const errors: Error[] = [];
    receiver.onError((error) => void errors.push(error));
    receiver.onAny(() => undefined);
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
    expect(reply.status).toBe(503);
    expect(JSON.parse(reply.body)).toMatchObject({ code: 'store_unavailable' });
    expect(reply.headers['retry-after']).toBe('5');
    const message = (errors.at(-1)!.cause as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toContain(`The receiver inbox ${file} is not valid JSON (`);
    expect(message).toContain(`move ${file} aside`);
    expect(message).toContain('docs/inbox.md');
    // Not the inbox's format: the same advice. The lock was released, so the fixed file opens.
    await writeFile(file, '[]');
    const backend = new FileInboxBackend({ file, keepDone: 10, keepDoneMs: 1000, clock: Date.now });
    await expect(backend.open()).rejects.toThrow(`The receiver inbox ${file} is not a cliphook inbox file`);
    await writeFile(file, '{"version":1,"records":[]}');
    const fixed = new FileInboxBackend({ file, keepDone: 10, keepDoneMs: 1000, clock: Date.now });
    await fixed.open();
    expect(await fixed.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 0 });
    await fixed.close();
  });

  it('keeps pending events across close and runs them at the next start; close waits for a running handler', async () => {
    const { receiver, send, make, clock } = await setup({ concurrency: 1 });
    let finish!: () => void;
    const first: number[] = [];
    receiver.onAny((event: WebhookEvent) => {
      first.push(event.id);
      return new Promise<void>((resolve) => (finish = resolve));
    });
    const hooks = [await send(), await send(), await send()];
    await vi.waitFor(() => expect(first).toHaveLength(1));
    const closed = receiver.close();
    // No I/O stands between close() and the runner's stop (the inbox is open, nothing reconciles):
    // once the promises have run, it takes no more events, so the handler's end starts no other.
    await flushPromises();
    finish();
    await closed;
    expect(first).toHaveLength(1);
    const again = make();
    const second: number[] = [];
    again.onAny((event: WebhookEvent) => void second.push(event.id));
    await vi.waitFor(async () => expect(await again.inbox!.stats()).toEqual({ pending: 0, running: 0, dead: 0, done: 3 }));
    expect(second.sort()).toEqual(hooks.slice(1).map((h) => h.hook.event.id).sort());
    void clock;
  });

  it('purges dead and done records only, and lists newest first with a limit', async () => {
    const { receiver, send, clock } = await setup({ retries: 0 });
    receiver.onAny((event: WebhookEvent) => {
      if (event.event === 'video.failed') throw new Error('no');
    });
    await send();
    await clock.advance(1000);
    await send(createTestWebhook('video.failed', { secret: SECRET, now: clock.now() }));
    await vi.waitFor(async () => expect(await receiver.inbox!.stats()).toMatchObject({ done: 1, dead: 1 }));
    expect((await receiver.inbox!.list({ limit: 1 }))[0]).toMatchObject({ name: 'video.failed' });
    await expect(receiver.inbox!.purge({ state: 'pending' as 'dead' })).rejects.toThrow(TypeError);
    expect(await receiver.inbox!.purge({ state: 'dead', before: 0 })).toBe(0);
    expect(await receiver.inbox!.purge({ state: 'dead' })).toBe(0); // finished at now, not before it
    await clock.advance(1);
    expect(await receiver.inbox!.purge({ state: 'dead' })).toBe(1);
    expect(await receiver.inbox!.stats()).toMatchObject({ dead: 0, done: 1 });
  });

  it('inbox: true keeps inbox.json beside the delivery store, one receiver per file in a process', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const store = new FileDeliveryStore({ file: tmp.file('deliveries.json') });
    const receiver = createReceiver({ secret: SECRET, store, inbox: true });
    cleanups.push(() => receiver.close());
    expect(receiver.inbox!.where).toBe(tmp.file('inbox.json'));
    expect(() => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file: tmp.file('inbox.json') } })).toThrow(/already open by another inbox/);
  });

  it('ingest (reconciliation) goes through the inbox: stored, run with source reconcile, then a webhook of that event is a duplicate', async () => {
    const { receiver, send, clock } = await setup();
    const seen: Array<Pick<WebhookContext, 'deliveryId' | 'source' | 'attempt'>> = [];
    receiver.onAny((_event, { deliveryId, source, attempt }) => void seen.push({ deliveryId, source, attempt }));
    const hook = createTestWebhook('video.completed', { secret: SECRET, now: clock.now() });
    const { delivered_at: _, ...event } = hook.event;
    expect(await receiver.ingest({ ...event, delivered_at: new Date(clock.now()).toISOString() }, { source: 'reconcile' })).toBe('handled');
    const id = `reconcile:video.completed:${hook.event.id}`;
    await vi.waitFor(async () => expect(await receiver.inbox!.get(keyOf(hook))).toMatchObject({ deliveryId: id, state: 'done', source: 'reconcile' }));
    expect(seen).toEqual([{ deliveryId: id, source: 'reconcile', attempt: 1 }]);
    expect(await receiver.ingest(hook.event, { source: 'reconcile' })).toBe('duplicate');
    const late = await send(hook);
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ duplicate: true });
    await receiver.inbox!.idle();
    expect(seen).toHaveLength(1);
  });

  it('validates its options at construction, naming the option', () => {
    const make = (inbox: unknown) => () => createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: inbox as never });
    expect(make({ concurrency: 0 })).toThrow(/`inbox.concurrency`/);
    expect(make({ retries: -1 })).toThrow(/`retries`/);
    expect(make({ minTimeout: 10, maxTimeout: 5 })).toThrow(/`maxTimeout`/);
    expect(make({ maxPending: 1.5 })).toThrow(/`inbox.maxPending`/);
    expect(make({ maxPendingBytes: 0 })).toThrow(/`inbox.maxPendingBytes`/);
    expect(make({ maxPendingBytes: 'lots' })).toThrow(/`inbox.maxPendingBytes`/);
    // The default limit is 256kb: a budget below it cannot hold one event.
    expect(make({ maxPendingBytes: '100kb' })).toThrow(/`inbox.maxPendingBytes` \(102400\) to be at least `limit` \(262144\)/);
    expect(make({ file: 'a.json', redis: 'redis://127.0.0.1:1' })).toThrow(/not both/);
    expect(make('yes')).toThrow(/`inbox`/);
  });

  it('idle() names a bad option', async () => {
    const { receiver } = await setup();
    await expect(receiver.inbox!.idle({ handlers: 'no' as unknown as boolean })).rejects.toThrow(/`handlers` to be a boolean/);
  });

  it('without an inbox the handler sees attempt 1 and source webhook, and is answered 200 after it ran', async () => {
    const receiver = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore() });
    const seen: WebhookContext[] = [];
    receiver.onAny((_event, context) => void seen.push(context));
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
    expect(reply.status).toBe(200);
    expect(seen[0]).toMatchObject({ attempt: 1, source: 'webhook' });
    expect(receiver.inbox).toBeUndefined();
  });
  it('answers 202 once the event is in the inbox, without waiting for the delivery mark; close() waits for the mark, and a failed mark reaches onError', async () => {
    // Issue 30 item 4: one group commit per request (the inbox's), not two in a row.
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const memory = new MemoryDeliveryStore();
    let finish!: (error?: Error) => void;
    const marks: string[][] = [];
    const store = {
      claim: (keys: readonly string[], leaseMs: number, owner: string) => memory.claim(keys, leaseMs, owner),
      complete: (keys: readonly string[]) =>
        new Promise<void>((resolve, reject) => {
          finish = (error) => (error ? reject(error) : (marks.push([...keys]), memory.complete(keys).then(resolve)));
        }),
      release: (keys: readonly string[], owner: string) => memory.release(keys, owner),
      close: () => memory.close(),
    };
    const receiver = createReceiver({ secret: SECRET, store, inbox: { file: tmp.file('inbox.json') } });
    const errors: unknown[] = [];
    receiver.onError((error) => void errors.push(error));
    receiver.onAny(() => undefined);
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    const reply = await receiver.receive(Buffer.from(hook.body), hook.headers);
    expect(reply.status).toBe(202);
    expect(marks).toEqual([]); // answered while the mark is still being written
    let closed = false;
    const closing = receiver.close().then(() => (closed = true));
    // The inbox's part of close() (its file) is the only I/O before the marks: once close() has reached it,
    // it has closed and the promises have run, close() has done all it can without the mark.
    await flushPromises();
    await receiver.inbox!.close(); // the same close, already under way
    await flushPromises();
    expect(closed).toBe(false);
    finish();
    await closing;
    expect(marks).toEqual([[`e:video.completed:${hook.event.id}`]]);
    // A mark that fails: the event is still queued (202) and the failure is told.
    const again = createReceiver({ secret: SECRET, store, inbox: { file: tmp.file('inbox2.json') } });
    cleanups.push(() => again.close());
    again.onError((error) => void errors.push(error));
    const second = createTestWebhook('video.completed', { secret: SECRET });
    expect((await again.receive(Buffer.from(second.body), second.headers)).status).toBe(202);
    const told = new Promise((resolve) => again.onError(resolve));
    finish(new Error('disk full'));
    await told;
    expect(errors).toEqual([expect.objectContaining({ message: expect.stringContaining('disk full') })]);
  });
  it('a delivery of an event already in the inbox whose mark was lost (a crash after the 202) is a duplicate, and its handler runs once', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    let runs = 0;
    const first = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file } });
    first.onAny(() => void runs++);
    const hook = createTestWebhook('video.completed', { secret: SECRET });
    expect((await first.receive(Buffer.from(hook.body), hook.headers)).status).toBe(202);
    await first.close();
    // The next start with a delivery store that lost the mark: the inbox still holds the event.
    const next = createReceiver({ secret: SECRET, store: new MemoryDeliveryStore(), inbox: { file } });
    cleanups.push(() => next.close());
    next.onAny(() => void runs++);
    const again = await next.receive(Buffer.from(hook.body), hook.headers);
    expect({ status: again.status, body: JSON.parse(again.body) }).toEqual({ status: 200, body: { received: true, duplicate: true } });
    await next.inbox!.idle();
    expect(runs).toBe(1);
  });
});
