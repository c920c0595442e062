// The inspector log gathers the lines of a short window into one write on a file kept open (issue 23).
import { readFile } from 'node:fs/promises';
import * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { lineOf, parseLine } from '../../src/inspector/exchange-line.js';
import { exchangeVideoId, summarize, type Exchange } from '../../src/inspector/exchanges.js';
import { WRITE_AFTER_MS } from '../../src/inspector/exchange-log.js';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { testdir } from '../relay/fixtures.js';
import { exchangeFixture } from './fixtures.js';

const writes: string[] = [];
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  const open = vi.fn(async (...args: Parameters<typeof actual.open>) => {
    const handle = await actual.open(...args);
    const write = handle.write.bind(handle) as (...args: unknown[]) => Promise<unknown>;
    const writev = handle.writev.bind(handle) as (...args: unknown[]) => Promise<unknown>;
    // A batch whose lines span slabs goes out with one writev: one write all the same.
    return Object.assign(handle, {
      write: (...args: unknown[]) => (writes.push(String(args[0])), write(...args)),
      writev: (...args: unknown[]) => (writes.push((args[0] as Buffer[]).join('')), writev(...args)),
    });
  });
  return { ...actual, open };
});

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  writes.length = 0;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the inspector log under a burst', () => {
  it('appends 300 exchanges recorded together with one write, every line kept, in order; a later burst is one more write on the same open file', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const log = join(dir, 'listen.events.jsonl');
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log });
    cleanups.push(() => recorder.close());
    const open = vi.mocked(fsPromises.open);
    open.mockClear();
    for (let n = 1; n <= 300; n++) recorder.record(exchangeFixture(n));
    await recorder.flush();
    expect(writes).toHaveLength(1);
    const ids = (await readFile(log, 'utf8')).split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: number }).id);
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));

    for (let n = 301; n <= 310; n++) recorder.record(exchangeFixture(n));
    await recorder.close();
    expect(writes).toHaveLength(2);
    expect(open).toHaveBeenCalledTimes(1);
    expect((await readFile(log, 'utf8')).split('\n').filter(Boolean)).toHaveLength(310);
  });

  it('writes a window of lines on its own WRITE_AFTER_MS after the first, with no flush asked', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const log = join(dir, 'listen.events.jsonl');
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log });
    cleanups.push(() => recorder.close());
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      for (let n = 1; n <= 3; n++) recorder.record(exchangeFixture(n));
      await vi.advanceTimersByTimeAsync(WRITE_AFTER_MS - 1);
      expect(writes).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(() => expect(writes).toHaveLength(1));
    await vi.waitFor(async () => expect((await readFile(log, 'utf8')).split('\n').filter(Boolean)).toHaveLength(3));
  });

  it('rewrites a full log with the lines of the exchanges it still holds, byte for byte as they were appended, the new ones after them', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const log = join(dir, 'listen.events.jsonl');
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log, maxEvents: 100 });
    cleanups.push(() => recorder.close());
    const linesOf = async () => (await readFile(log, 'utf8')).split('\n').filter(Boolean);
    // Video ids not read yet: their lines leave them out.
    for (let n = 1; n <= 150; n++) {
      recorder.record({ ...exchangeFixture(n), videoId: undefined });
      if (n % 10 === 0) await recorder.flush();
    }
    const before = await linesOf();
    expect(before).toHaveLength(150);
    // The page reads them now: a line made again would have them.
    expect(recorder.list().every((item) => item.videoId === String(item.id))).toBe(true);
    for (let n = 151; n <= 210; n++) {
      recorder.record({ ...exchangeFixture(n), videoId: undefined });
      if (n % 10 === 0) await recorder.flush();
    }
    const after = await linesOf();
    // Past 200 lines: the last 100 held (111-210) stay, the first kept ones byte for byte as they were.
    expect(after.map((line) => (JSON.parse(line) as { id: number }).id)).toEqual(Array.from({ length: 100 }, (_, i) => 111 + i));
    expect(after.slice(0, 40)).toEqual(before.slice(110));
    // Written from the lines held, not made again from the exchanges.
    expect(after.some((line) => line.includes('"videoId"'))).toBe(false);
    await recorder.close();
    const reopened = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log, maxEvents: 100 });
    cleanups.push(() => reopened.close());
    expect(reopened.list().map((item) => item.id)).toEqual(Array.from({ length: 100 }, (_, i) => 111 + i));
  });

  it('writes each line as the JSON that JSON.stringify wrote of the exchange, bodies as base64', () => {
    const base64 = (body: Exchange['request']['body']) => ({ b64: body.bytes.toString('base64'), size: body.size, truncated: body.truncated });
    const reference = (exchange: Exchange) =>
      `${JSON.stringify({ v: 1, ...exchange, request: { headers: exchange.request.headers, body: base64(exchange.request.body) }, reply: exchange.reply && { ...exchange.reply, body: base64(exchange.reply.body) } })}\n`;
    const whole = { ...exchangeFixture(7), id: 7 } as Exchange;
    const variants: Exchange[] = [
      whole,
      { ...whole, reply: null, receivedAt: null, seq: null, channel: null, videoId: null, signatureValid: null },
      // Not read yet (issue 23): the member is left out, as JSON.stringify leaves out an undefined one.
      { ...whole, videoId: undefined },
      { ...whole, eventName: 'quote " and \\ and \u2028', reply: { ...whole.reply!, status: null, error: { code: 'local_timeout', detail: 'no reply within 8500 ms' }, refused: { code: 'invalid_signature', detail: 'x' }, stale: true } },
      { ...whole, replayOf: 3, edited: true, request: { headers: ['X-É', 'vàlue'], body: { bytes: Buffer.from([0, 255, 10]), size: 3000, truncated: true } } },
    ];
    for (const exchange of variants) {
      const line = lineOf(exchange);
      expect(line.indexOf('\n')).toBe(line.length - 1);
      expect(JSON.parse(line)).toEqual(JSON.parse(reference(exchange)));
    }
  });

  it('reads a video id only when asked for, and again from a line that was written before it was (issue 23)', () => {
    const exchange = { ...exchangeFixture(42), id: 42, videoId: undefined } as Exchange;
    const line = lineOf(exchange);
    expect(line).not.toContain('videoId');
    const back = parseLine(line.trimEnd())!;
    expect(back.videoId).toBeUndefined();
    expect(summarize(back).videoId).toBe('42');
    expect(back.videoId).toBe('42');
    // Once read, it is written; a line of an older version (always with it) reads as it was.
    expect(parseLine(lineOf(back).trimEnd())!.videoId).toBe('42');
    expect(exchangeVideoId(parseLine(lineOf({ ...back, videoId: null }).trimEnd())!)).toBeNull();
  });
});
