// A finished exchange is kept as its record: its log line, made once, in a slab, and a few primitives
// (issue 23). What the page, Replay and the log read of it is what the exchange was.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExchangeBook, RECORD_ALLOWANCE } from '../../src/inspector/exchange-book.js';
import { exchangeOf, lineOf, LineSlabs, parseLine, runsOf, SLAB_BYTES } from '../../src/inspector/exchange-line.js';
import { ExchangeLog } from '../../src/inspector/exchange-log.js';
import { detailOf, ExchangeRecord, exchangeVideoId, requestBodyOfLine, summarize, type Exchange, type KeptBody } from '../../src/inspector/exchanges.js';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { afterEachTest, exchangeFixture, recordingApp } from './fixtures.js';

const { cleanups, tempDir } = afterEachTest();

async function logFile() {
  const dir = await tempDir();
  return { dir, file: join(dir, 'listen.events.jsonl') };
}

const whole = (n: number, changes: Partial<Exchange> = {}): Exchange => ({ ...exchangeFixture(n), id: n, ...changes });
const body = (bytes: Buffer, size = bytes.length): KeptBody => ({ bytes, size, truncated: size > bytes.length });

/** Exchanges of every shape a record must give back as they were. */
function variants(): Exchange[] {
  const base = whole(7);
  const reply = base.reply!;
  return [
    base,
    // Not read yet, read as null, and read from a body kept truncated.
    whole(8, { videoId: undefined }),
    whole(9, { videoId: null, receivedAt: null, seq: null, channel: null, eventName: null, deliveryId: null, signatureValid: null }),
    whole(10, { videoId: '10', request: { headers: ['Content-Type', 'application/json'], body: body(Buffer.from('{"event":"video.completed","id":10,'), 5000) } }),
    // Truncated bodies both ways, bytes that are not UTF-8, headers with quotes, escapes and non-ASCII.
    whole(11, {
      request: { headers: ['X-É', 'vàlue "quoted" \\ \u2028', 'X-Body', '"body":{"b64":"AAAA"}'], body: body(Buffer.from([0, 255, 10, 0x22, 0x5c])) },
      reply: { ...reply, headers: ['x-a', '1', 'X-A', '2'], body: body(Buffer.from([0xc3, 0x28, 1, 2]), 70_000) },
    }),
    // listen refused it; the app was down (no status); the app called it stale.
    whole(12, { signatureValid: false, reply: { ...reply, status: 401, refused: { code: 'invalid_signature', detail: 'the signature does not match' }, durationMs: 0 } }),
    whole(13, { reply: { status: null, error: { code: 'local_unreachable', detail: 'connect ECONNREFUSED 127.0.0.1:9' }, refused: null, stale: false, durationMs: 1, headers: [], body: body(Buffer.alloc(0)) } }),
    whole(14, { reply: { ...reply, status: 409, stale: true, durationMs: 8500 } }),
    // A replay made from the inspector, edited; one caught up from the relay's buffer, re-signed.
    whole(15, { receivedAt: null, seq: null, replayOf: 3, edited: true, signatureValid: true }),
    whole(16, { backlog: true, replay: true, resigned: true, method: 'PUT', url: 'http://127.0.0.1:9/webhooks/extra?q={1}' }),
    // Empty bodies, no headers.
    whole(17, { request: { headers: [], body: body(Buffer.alloc(0)) }, reply: { ...reply, headers: [], body: body(Buffer.alloc(0)) } }),
  ];
}

describe('an exchange kept as its record', () => {
  it('reads back as the exchange it was: every field, the detail the page shows, the row of the list', () => {
    const book = new ExchangeBook({ maxEvents: 100, maxTotalBytes: 64 * 1024 * 1024 });
    for (const exchange of variants()) {
      // Shallow copies: reading the video id sets it on the copy.
      const detail = detailOf({ ...exchange });
      const summary = summarize({ ...exchange });
      const record = book.put(exchange);
      expect(record).toBeInstanceOf(ExchangeRecord);
      expect((record as ExchangeRecord).line.equals(Buffer.from(lineOf(exchange)))).toBe(true);
      expect(exchangeOf(record)).toEqual(exchange);
      expect(summarize(record)).toEqual(summary);
      expect(detailOf(exchangeOf(record))).toEqual(detail);
    }
  });

  it('writes the bytes of lineOf, and reads back any exchange as it was (property)', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    const nullable = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: null });
    const headers = fc.array(fc.tuple(text, text), { maxLength: 5 }).map((pairs) => pairs.flat());
    const kept = fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.nat(2000)).map(([bytes, extra]) => body(Buffer.from(bytes), bytes.length + (extra % 3 === 0 ? extra : 0)));
    const problem = nullable(fc.record({ code: text, detail: text }));
    const reply = fc.record({ status: nullable(fc.integer({ min: 100, max: 599 })), error: problem, refused: problem, stale: fc.boolean(), durationMs: fc.nat(100_000), headers, body: kept });
    const exchange = fc.record({
      id: fc.maxSafeNat().filter((id) => id > 0), at: fc.maxSafeNat(), receivedAt: nullable(fc.maxSafeNat()), seq: nullable(fc.maxSafeNat()),
      channel: nullable(text), method: text, url: text, eventName: nullable(text), deliveryId: nullable(text), videoId: fc.option(nullable(text), { nil: undefined }),
      signatureValid: nullable(fc.boolean()), resigned: fc.boolean(), backlog: fc.boolean(), replay: fc.boolean(), replayOf: nullable(fc.nat()), edited: fc.boolean(),
      request: fc.record({ headers, body: kept }), reply,
    });
    fc.assert(
      fc.property(exchange, (value) => {
        const slabs = new LineSlabs();
        const line = slabs.line(value);
        // The slab holds the bytes of lineOf.
        expect(line.toString('latin1')).toBe(Buffer.from(lineOf(value)).toString('latin1'));
        const record = new ExchangeRecord(value, line);
        const back = exchangeOf(record);
        expect(back).toEqual(value);
        expect(summarize(record)).toEqual(summarize({ ...value }));
      }),
      { numRuns: 300 },
    );
  });

  it('reads its video id only when first asked for, from its line alone, and keeps it', () => {
    const book = new ExchangeBook({ maxEvents: 10, maxTotalBytes: 1024 * 1024 });
    const record = book.put(whole(42, { videoId: undefined })) as ExchangeRecord;
    expect(record.line.toString()).not.toContain('videoId');
    expect(record.videoId).toBeUndefined();
    expect(summarize(record).videoId).toBe('42');
    expect(record.videoId).toBe('42');
    // Read once: the line is what it was (the log holds those bytes), the detail shows it.
    expect(record.line.toString()).not.toContain('videoId');
    expect(exchangeOf(record).videoId).toBe('42');
    // A body JSON.parse must read (the id late, escaped), and a header that spells the body's key.
    const late = Buffer.from(`{"a":"${'x'.repeat(300)}","\\u0069d":"v\\"1"}`);
    const tricky = book.put(whole(43, { videoId: undefined, request: { headers: ['X-Trick', '","body":{"b64":"e30="}'], body: body(late) } })) as ExchangeRecord;
    expect(requestBodyOfLine(tricky.line).equals(late)).toBe(true);
    expect(exchangeVideoId(tricky)).toBe('v"1');
    // A line of another shape (members in another order) is parsed whole.
    const reordered = Buffer.from(`${JSON.stringify({ reply: null, request: { body: { size: 9, truncated: false, b64: Buffer.from('{"id":77}').toString('base64') }, headers: [] } })}\n`);
    expect(requestBodyOfLine(reordered).toString()).toBe('{"id":77}');
  });

  it('keeps lines side by side in 64 KiB slabs, a line past a slab in a buffer of its own; a run of them is one buffer', () => {
    const slabs = new LineSlabs();
    const exchanges = Array.from({ length: 400 }, (_, i) => whole(i + 1));
    const lines = exchanges.map((exchange) => slabs.line(exchange));
    const big = whole(401, { request: { headers: [], body: body(Buffer.alloc(3 * SLAB_BYTES, 'a')) } });
    const after = whole(402);
    lines.push(slabs.line(big), slabs.line(after));
    exchanges.push(big, after);
    lines.forEach((line, i) => expect(line.equals(Buffer.from(lineOf(exchanges[i]!)))).toBe(true));
    const buffers = new Set(lines.map((line) => line.buffer));
    // 400 lines of ~700 bytes: a few slabs, each filled before the next.
    expect(buffers.size).toBeGreaterThan(3);
    expect(buffers.size).toBeLessThan(10);
    for (const buffer of buffers) if (buffer !== lines[400]!.buffer) expect(buffer.byteLength).toBe(SLAB_BYTES);
    expect(lines[400]!.buffer.byteLength).toBeGreaterThan(SLAB_BYTES);
    // The line after the big one goes on in the slab it left.
    expect(lines[401]!.buffer).toBe(lines[399]!.buffer);
    const runs = runsOf(lines);
    expect(runs).toHaveLength(buffers.size + 1);
    expect(Buffer.concat(runs).equals(Buffer.concat(lines))).toBe(true);
    // Lines out of order are runs of their own.
    expect(runsOf([lines[2]!, lines[1]!, lines[0]!])).toHaveLength(3);
  });

  it('bounds the book by count and by line bytes plus an allowance; the newest stays whatever it weighs', () => {
    const book = new ExchangeBook({ maxEvents: 1000, maxTotalBytes: 20_000 });
    const records = Array.from({ length: 100 }, (_, i) => book.put(whole(i + 1)) as ExchangeRecord);
    const held = book.list() as ExchangeRecord[];
    expect(book.bytes).toBe(held.reduce((sum, record) => sum + record.line.length + RECORD_ALLOWANCE, 0));
    expect(book.bytes).toBeLessThanOrEqual(20_000);
    // The last one forgotten would not fit.
    const forgotten = records[records.length - held.length - 1]!;
    expect(book.bytes + forgotten.line.length + RECORD_ALLOWANCE).toBeGreaterThan(20_000);
    expect(held.map((record) => record.id)).toEqual(records.slice(-held.length).map((record) => record.id));
    book.put(whole(101, { request: { headers: [], body: body(Buffer.alloc(50_000)) } }));
    expect(book.list().map((item) => item.id)).toEqual([101]);
    // Filters read the primitives: the event, the outcome (every tenth fixture is a failed 500).
    const filtered = new ExchangeBook({ maxEvents: 30, maxTotalBytes: 1024 * 1024 });
    for (let n = 1; n <= 40; n++) filtered.put(whole(n));
    filtered.put({ ...whole(41), reply: null });
    expect(filtered.size).toBe(30);
    expect(filtered.list({ outcome: '5xx' }).map((item) => item.id)).toEqual([20, 30, 40]);
    expect(filtered.list({ event: 'video.failed', outcome: '5xx' }).map((item) => item.id)).toEqual([20, 30, 40]);
    expect(filtered.list({ outcome: 'pending' }).map((item) => item.id)).toEqual([41]);
  });
});

describe('the log of records', () => {
  function bookAndLog(file: string, maxEvents: number, onError: (error: Error) => void = (error) => { throw error; }) {
    const book = new ExchangeBook({ maxEvents, maxTotalBytes: 64 * 1024 * 1024 });
    const log = new ExchangeLog({ file, maxEvents, maxBytes: 64 * 1024 * 1024, snapshot: () => book.list(), onError });
    cleanups.push(() => log.close());
    return { book, log };
  }

  it('writes the very bytes the book holds, across slabs, in the order they came', async () => {
    const { file } = await logFile();
    const { book, log } = bookAndLog(file, 10_000);
    const records: ExchangeRecord[] = [];
    for (let n = 1; n <= 500; n++) {
      const record = book.put(whole(n)) as ExchangeRecord;
      records.push(record);
      log.append(record);
      if (n % 150 === 0) await log.flush();
    }
    await log.flush();
    const bytes = await readFile(file);
    expect(bytes.equals(Buffer.concat(records.map((record) => record.line)))).toBe(true);
    expect(new Set(records.map((record) => record.line.buffer)).size).toBeGreaterThan(1);
  });

  it('rewrites a full file with the held lines byte for byte, and reads them back as records of the same bytes', async () => {
    const { file } = await logFile();
    const { book, log } = bookAndLog(file, 50);
    const made = new Map<number, Buffer>();
    for (let n = 1; n <= 180; n++) {
      const record = book.put(whole(n, { videoId: n % 2 === 0 ? undefined : String(n) })) as ExchangeRecord;
      made.set(n, Buffer.from(record.line));
      log.append(record);
      // Reading a video id once the line is made changes nothing of the line.
      if (n % 3 === 0) exchangeVideoId(record);
      if (n % 10 === 0) await log.flush();
    }
    await log.close();
    const lines = (await readFile(file, 'latin1')).split('\n').filter(Boolean);
    // Rewritten past 100 lines: the 50 held then, the lines appended since.
    expect(lines.length).toBeLessThanOrEqual(100);
    expect(lines.length).toBeGreaterThanOrEqual(50);
    const ids = lines.map((line) => parseLine(line)!.id);
    expect(ids).toEqual(Array.from({ length: lines.length }, (_, i) => 181 - lines.length + i));
    lines.forEach((line, i) => expect(Buffer.from(`${line}\n`, 'latin1').equals(made.get(ids[i]!)!)).toBe(true));
    // Loaded: records whose lines are the file's bytes; written again (a rewrite) as they are.
    const reload = new ExchangeLog({ file, maxEvents: 50, maxBytes: 64 * 1024 * 1024, snapshot: () => [], onError: () => undefined });
    const loaded = await reload.load();
    expect(loaded.map((record) => record.id)).toEqual(ids.slice(-50));
    for (const record of loaded) expect(record.line.equals(made.get(record.id)!)).toBe(true);
    expect(loaded.map((record) => summarize(record))).toEqual(ids.slice(-50).map((id) => summarize(whole(id))));
  });

  it('loads a line as an older version wrote it, keeping its bytes as they are', async () => {
    const { file } = await logFile();
    const old = whole(5);
    const b64 = (kept: KeptBody) => ({ b64: kept.bytes.toString('base64'), size: kept.size, truncated: kept.truncated });
    const line = `${JSON.stringify({ v: 1, ...old, request: { headers: old.request.headers, body: b64(old.request.body) }, reply: { ...old.reply!, body: b64(old.reply!.body) } }, null, 1).replaceAll('\n', '')}\n`;
    await writeFile(file, line);
    const loaded = await new ExchangeLog({ file, maxEvents: 10, maxBytes: 1024 * 1024, snapshot: () => [], onError: () => undefined }).load();
    expect(loaded[0]!.line.equals(Buffer.from(line))).toBe(true);
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log: file });
    cleanups.push(() => recorder.close());
    expect(recorder.detail(5)).toEqual(detailOf(old));
    expect(recorder.list()).toEqual([summarize(old)]);
  });

  it('after a torn last line, the next line is not glued to it: the first write makes the file again', async () => {
    const { file } = await logFile();
    const first = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log: file });
    first.record(exchangeFixture(1));
    first.record(exchangeFixture(2));
    await first.close();
    await writeFile(file, `${await readFile(file, 'utf8')}{"v":1,"id":3,"at":1,"method":"POST","url":"http://x/","requ`);
    const second = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log: file });
    expect(second.record(exchangeFixture(4)).id).toBe(3);
    await second.close();
    const third = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log: file });
    cleanups.push(() => third.close());
    expect(third.list().map((item) => item.deliveryId)).toEqual(['dlv_000001', 'dlv_000002', 'dlv_000004']);
  });

  it('after a failed write, the next one writes every line held, those of the failed batch too', async () => {
    const { dir } = await logFile();
    // A folder that cannot be made (its parent is a file), then can.
    await writeFile(join(dir, 'state'), '');
    const file = join(dir, 'state', 'listen.events.jsonl');
    const warnings: string[] = [];
    const recorder = await ListenRecorder.open({ forwardTo: 'http://127.0.0.1:9/webhooks', log: file, onWarning: (message) => warnings.push(message) });
    cleanups.push(() => recorder.close());
    for (let n = 1; n <= 3; n++) recorder.record(exchangeFixture(n));
    await recorder.flush();
    expect(warnings).toHaveLength(1);
    await rm(join(dir, 'state'));
    recorder.record(exchangeFixture(4));
    await recorder.flush();
    expect((await readFile(file, 'utf8')).split('\n').filter(Boolean).map((line) => parseLine(line)!.id)).toEqual([1, 2, 3, 4]);
  });
});

describe('memory only (log: false)', () => {
  it('keeps finished exchanges as they are: no line is made for the book alone', () => {
    const book = new ExchangeBook({ maxEvents: 10, maxTotalBytes: 1024 * 1024, lines: false });
    const exchange = whole(1);
    expect(book.put(exchange)).toBe(exchange);
    expect(book.get(1)).toBe(exchange);
    expect(book.bytes).toBe(512 + exchange.request.body.bytes.length + exchange.reply!.body.bytes.length + [...exchange.request.headers, ...exchange.reply!.headers].join('').length);
  });

  it('the list, the detail, Replay of the same bytes, the replayed exchange, as with a log', async () => {
    const app = await recordingApp();
    cleanups.push(app.close);
    const recorder = await ListenRecorder.open({ forwardTo: `${app.url}/webhooks`, log: false, maxEvents: 5 });
    cleanups.push(() => recorder.close());
    const exchanges = variants().map(({ id: _, ...exchange }) => ({ ...exchange, url: `${app.url}/webhooks` }));
    const ids = exchanges.map((exchange) => recorder.record(exchange).id);
    expect(recorder.size).toBe(5);
    expect(recorder.list().map((item) => item.id)).toEqual(ids.slice(-5));
    const last = ids.at(-1)!;
    expect(recorder.detail(last)).toEqual(detailOf({ ...exchanges.at(-1)!, id: last }));
    const replayed: Exchange[] = [];
    recorder.on('replayed', (exchange) => replayed.push(exchange));
    const sentBody = Buffer.from([0, 255, 10, 0x22, 0x5c]);
    const id = recorder.record({ ...exchanges[4]!, request: { headers: ['Content-Type', 'application/octet-stream', 'X-Quote', 'a "b" \\c'], body: body(sentBody) } }).id;
    const summary = await recorder.replay(id);
    expect(summary).toMatchObject({ replayOf: id, status: 200, outcome: '2xx' });
    expect(app.received.at(-1)!.body.equals(sentBody)).toBe(true);
    expect(app.header(app.received.length - 1, 'x-quote')).toBe('a "b" \\c');
    expect(replayed).toHaveLength(1);
    expect(replayed[0]!.request.body.bytes.equals(sentBody)).toBe(true);
    expect(recorder.detail(summary.id)).toEqual(detailOf(replayed[0]!));
    // Not replayable as they were: a body kept truncated, an event listen refused.
    await expect(recorder.replay(recorder.record(exchanges[3]!).id)).rejects.toMatchObject({ code: 'replay_unavailable' });
    await expect(recorder.replay(recorder.record(exchanges[5]!).id)).rejects.toMatchObject({ code: 'replay_unavailable' });
  });
});
