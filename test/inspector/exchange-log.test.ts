// The listen inspector's memory: bounded in memory and on disk, kept across restarts (issue 14).
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExchangeBook } from '../../src/inspector/exchange-book.js';
import { keep } from '../../src/inspector/exchanges.js';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { afterEachTest, exchangeFixture } from './fixtures.js';

const { cleanups, tempDir } = afterEachTest();

async function logFile() {
  return join(await tempDir(), 'nested', 'listen.events.jsonl');
}

async function reopen(log: string, options: Partial<Parameters<typeof ListenRecorder.open>[0]> = {}) {
  const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log, ...options });
  cleanups.push(() => recorder.close());
  return recorder;
}

const lines = async (file: string) => (await readFile(file, 'utf8')).split('\n').filter(Boolean).length;

describe('the inspector log', () => {
  it('keeps every finished exchange across a restart, bytes and all, in a file only its owner reads; ids go on growing', async () => {
    const log = await logFile();
    const first = await reopen(log);
    for (let n = 1; n <= 3; n++) first.record(exchangeFixture(n));
    await first.close();
    if (process.platform !== 'win32') expect((await stat(log)).mode & 0o777).toBe(0o600);

    const second = await reopen(log);
    expect(second.list().map((item) => item.deliveryId)).toEqual(['dlv_000001', 'dlv_000002', 'dlv_000003']);
    const detail = second.detail(2)!;
    expect(Buffer.from(detail.request.body.base64, 'base64').equals(exchangeFixture(2).request.body.bytes)).toBe(true);
    expect(detail.reply?.body.text).toBe('{"ok":true}');
    expect(second.record(exchangeFixture(4)).id).toBe(4);
  });

  it('writes the line of a replay cut short by close() before the log closes', async () => {
    const log = await logFile();
    // A local app that takes the request and never answers.
    const sockets = new Set<import('node:net').Socket>();
    const app = createServer(() => undefined);
    app.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => app.close(resolve));
    });
    const url = `http://127.0.0.1:${(app.address() as AddressInfo).port}/webhooks`;
    const first = await ListenRecorder.open({ forwardTo: url, log });
    const { id } = first.record({ ...exchangeFixture(1), url });
    const replaying = first.replay(id).catch((error: Error) => error);
    await new Promise<void>((resolve) => (sockets.size > 0 ? resolve() : app.once('connection', () => resolve())));
    await first.close();
    await replaying;
    const second = await reopen(log);
    expect(second.list().map((item) => item.replayOf)).toEqual([null, id]);
  });

  it('skips a torn last line and lines that are not its own', async () => {
    const log = await logFile();
    const first = await reopen(log);
    first.record(exchangeFixture(1));
    first.record(exchangeFixture(2));
    await first.close();
    await appendFile(log, '{"v":1,"id":3,"at":1,"method":"POST","url":"http://x/","request":{"headers":[],"body":{"b64":"e30=","si');
    const again = await reopen(log);
    expect(again.list().map((item) => item.id)).toEqual([1, 2]);
    await writeFile(log, 'not json\n{"v":99,"id":1}\n[]\n');
    expect((await reopen(log)).list()).toEqual([]);
  });

  it('holds at most maxEvents, in memory and on disk: the file is rewritten once it holds twice as many lines', async () => {
    const log = await logFile();
    const recorder = await reopen(log, { maxEvents: 5 });
    for (let n = 1; n <= 12; n++) recorder.record(exchangeFixture(n));
    expect(recorder.list().map((item) => item.id)).toEqual([8, 9, 10, 11, 12]);
    await recorder.close();
    expect(await lines(log)).toBeLessThanOrEqual(10);
    expect((await reopen(log, { maxEvents: 5 })).list().map((item) => item.id)).toEqual([8, 9, 10, 11, 12]);
    // A longer file (written by a run with a larger bound) is read into the bound too.
    expect((await reopen(log, { maxEvents: 2 })).list().map((item) => item.id)).toEqual([11, 12]);
  });

  it('forgets the oldest exchanges past maxTotalBytes of bodies and headers, but never the newest', () => {
    const book = new ExchangeBook({ maxEvents: 100, maxTotalBytes: 4096 });
    for (let id = 1; id <= 20; id++) book.put({ ...exchangeFixture(id), id });
    expect(book.size).toBeLessThan(20);
    expect(book.bytes).toBeLessThanOrEqual(4096);
    expect(book.oldest).toBe(21 - book.size);
    const huge = exchangeFixture(21);
    book.put({ ...huge, id: 21, request: { headers: [], body: { bytes: Buffer.alloc(10_000), size: 10_000, truncated: false } } });
    expect(book.size).toBe(1);
    expect(book.get(21)).toBeDefined();
  });

  it('keeps the newest maxEvents through a long run of puts and replies, the oldest known at each step (issue 23)', () => {
    const book = new ExchangeBook({ maxEvents: 1_000, maxTotalBytes: 64 * 1024 * 1024 });
    const { reply, ...fixture } = exchangeFixture(1);
    const wrong: number[] = [];
    for (let id = 1; id <= 20_000; id++) {
      book.put({ ...fixture, id, reply: null });
      // Its reply comes later and weighs it again, as listen's recorder does.
      if (id > 3) book.put({ ...book.get(id - 3)!, reply });
      if (book.oldest !== Math.max(1, id - 999)) wrong.push(id);
    }
    expect(wrong).toEqual([]);
    expect(book.size).toBe(1_000);
    expect(book.list().map((exchange) => exchange.id)).toEqual(Array.from({ length: 1_000 }, (_, i) => 19_001 + i));
  });

  it('keeps the first maxBodyBytes of a body, with its real size, marked truncated', () => {
    expect(keep(Buffer.from('0123456789'), 4)).toEqual({ bytes: Buffer.from('0123'), size: 10, truncated: true });
    expect(keep(Buffer.from('0123'), 4)).toEqual({ bytes: Buffer.from('0123'), size: 4, truncated: false });
  });

  it('reports a log it cannot write once, and goes on in memory', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'file'), '');
    const warnings: string[] = [];
    // A folder that cannot be made: its parent is a file.
    const recorder = await reopen(join(dir, 'file', 'listen.events.jsonl'), { onWarning: (message) => warnings.push(message) });
    for (let n = 1; n <= 3; n++) recorder.record(exchangeFixture(n));
    await recorder.close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/cannot write the inspector's log .*listen\.events\.jsonl/);
    expect(recorder.list()).toHaveLength(3);
  });
});
