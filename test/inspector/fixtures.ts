import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listen as listenCommand, type ListenCommandOptions, type ListenIo } from '../../src/cli/commands/listen.js';
import type { Exchange } from '../../src/inspector/exchanges.js';
import { afterEach } from 'vitest';
import { testdir } from '../relay/fixtures.js';

const plain = (text: string) => text;
export const palette = { bold: plain, dim: plain, green: plain, yellow: plain, red: plain, cyan: plain };

/**
 * For a test file: `cleanups` run after each test, last first, and `tempDir()` makes a folder they remove.
 * @example const { cleanups, tempDir } = afterEachTest();
 */
export function afterEachTest(): { cleanups: Array<() => Promise<unknown>>; tempDir(): Promise<string> } {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    cleanups,
    async tempDir() {
      const { dir, cleanup } = await testdir();
      cleanups.push(cleanup);
      return dir;
    },
  };
}

/** A local app that records every request's raw headers and body bytes; `status()` decides each answer. */
export async function recordingApp(status: (req: { event: string | undefined }) => number = () => 200) {
  const received: Array<{ url: string; rawHeaders: string[]; body: Buffer }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) });
      const code = status({ event: req.headers['x-service-event'] as string | undefined });
      res.writeHead(code, { 'content-type': 'application/json', 'x-app': 'recording' });
      res.end(JSON.stringify({ received: code < 300, n: received.length }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    header: (index: number, name: string) => {
      const raw = received[index]?.rawHeaders ?? [];
      for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) return raw[i + 1];
      return undefined;
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** Runs `cliphook listen` in process until `stop()`; resolves once it is ready, with its inspector's URL. */
export async function runListen(flags: Partial<ListenCommandOptions> & Pick<ListenCommandOptions, 'relay' | 'state'>) {
  const controller = new AbortController();
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const push = (line: string) => {
    lines.push(line);
    for (const waiter of [...waiters]) if (waiter.pattern.test(line)) (waiters.splice(waiters.indexOf(waiter), 1), waiter.resolve(line));
  };
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve) => {
      const seen = lines.find((line) => pattern.test(line));
      if (seen) resolve(seen);
      else waiters.push({ pattern, resolve });
    });
  const io: ListenIo = { out: push, err: push, signal: controller.signal, now: () => new Date(), palette };
  const running = listenCommand({ inspect: '0', ...flags } as ListenCommandOptions, io);
  running.catch(() => undefined);
  const [inspectorLine, readyLine] = flags.json ? [/"type":"inspector"/, /"type":"ready"/] : [/^Inspector: /, /^Ready!/];
  const inspector = flags.inspect === false ? null : /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(await Promise.race([waitFor(inspectorLine), running.then(() => '')]))?.[1] ?? null;
  await Promise.race([waitFor(readyLine), running]);
  return {
    inspector,
    lines,
    waitFor,
    running,
    stop: async () => {
      controller.abort();
      await running;
    },
  };
}

/** A finished exchange for `ListenRecorder.record`, numbered `n`. */
export function exchangeFixture(n: number, at = Date.UTC(2026, 10, 21, 12, 0, 0) + n * 1000): Omit<Exchange, 'id'> {
  const body = Buffer.from(`{"event":"video.completed","id":${n},"status":"done","delivered_at":"2026-11-21T12:00:00Z"}`);
  return {
    at, receivedAt: at, seq: n, channel: 'chan', method: 'POST', url: 'http://127.0.0.1:9/webhooks',
    eventName: n % 10 === 0 ? 'video.failed' : 'video.completed', deliveryId: `dlv_${String(n).padStart(6, '0')}`, videoId: String(n),
    signatureValid: true, resigned: false, backlog: false, replay: false, replayOf: null, edited: false,
    request: { headers: ['Content-Type', 'application/json', 'X-Service-Event', 'video.completed'], body: { bytes: body, size: body.length, truncated: false } },
    reply: { status: n % 10 === 0 ? 500 : 200, error: null, refused: null, stale: false, durationMs: 3, headers: ['content-type', 'application/json'], body: { bytes: Buffer.from('{"ok":true}'), size: 11, truncated: false } },
  };
}
