import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer, type RelayServerOptions } from 'cliphook';
import { nodeLineFileIo, type LineFileIo } from '../../src/store/line-file-io.js';
import { manualScheduler, startLocalApp, testdir } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** node:fs, counting the bytes of each journal append and snapshot, and failing every write while `failing` is set. */
function faultyIo() {
  const io = {
    failing: null as NodeJS.ErrnoException | null,
    appended: [] as number[],
    snapshots: 0,
    fs: {
      ...nodeLineFileIo,
      async append(handle, pieces) {
        if (io.failing) throw io.failing;
        io.appended.push(pieces.reduce((sum, piece) => sum + piece.length, 0));
        return nodeLineFileIo.append(handle, pieces);
      },
      async replace(file, temp, pieces) {
        if (io.failing) throw io.failing;
        io.snapshots++;
        return nodeLineFileIo.replace(file, temp, pieces);
      },
    } satisfies LineFileIo,
  };
  return io;
}

function enospc(): NodeJS.ErrnoException {
  return Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
}

async function startRelay(options: RelayServerOptions) {
  const relay = createRelayServer(options);
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  return { relay, url };
}

async function post(url: string, body: string, deliveryId?: string) {
  const res = await fetch(url, { method: 'POST', body, headers: deliveryId ? { 'x-service-delivery': deliveryId } : {} });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

describe('relay persistence', () => {
  it('writes the same bytes per buffered event whatever is already buffered', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const io = faultyIo();
    const { url } = await startRelay({ file: `${dir}/relay.json`, fileIo: io.fs });
    const channel = await createChannel(url);
    const perEvent: number[] = [];
    const body = 'z'.repeat(4096);
    for (let i = 0; i < 300; i++) {
      const before = io.appended.reduce((a, b) => a + b, 0);
      expect((await post(channel.url, body, `dlv_${i}`)).status).toBe(503); // buffered: no listener
      perEvent.push(io.appended.reduce((a, b) => a + b, 0) - before);
    }
    // The 300th event, with 1.6 MB buffered before it, costs what the 2nd did (a digit more or less);
    // the first also reserved its block of sequence numbers.
    const steady = perEvent.slice(1);
    expect(Math.max(...steady) - Math.min(...steady)).toBeLessThanOrEqual(8);
    expect(Math.max(...steady)).toBeLessThan(4096 * 1.34 + 400);
    expect(io.snapshots).toBe(0);
  });

  it('refuses an event it cannot write with 507 relay_full, says so once on /healthz and in the log, and recovers by itself', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const io = faultyIo();
    const scheduler = manualScheduler();
    const warnings: string[] = [];
    const infos: string[] = [];
    const file = `${dir}/relay.json`;
    const options = { file, fileIo: io.fs, scheduler, logger: { info: (line: string) => infos.push(line), warn: (line: string) => warnings.push(line) } };
    const { relay, url } = await startRelay(options);
    const channel = await createChannel(url);
    expect((await post(channel.url, 'kept before', 'dlv_0')).status).toBe(503);

    io.failing = enospc();
    for (let i = 1; i <= 3; i++) {
      const refused = await post(channel.url, `lost ${i}`, `dlv_${i}`);
      expect(refused).toMatchObject({ status: 507, retryAfter: '10', body: { code: 'relay_full' } });
    }
    const failing = await fetch(`${url}/healthz`);
    expect(failing.status).toBe(503);
    expect(await failing.json()).toMatchObject({ status: 'failing', channels: 1, persistence: { ok: false, error: 'ENOSPC', detail: expect.stringMatching(/no space left/) } });
    expect((await fetch(`${url}/channels`, { method: 'POST' })).status).toBe(507);
    expect(warnings.filter((line) => line.includes('cannot write'))).toHaveLength(1);

    // Space is freed; the relay's own retry (an injected timer) writes again, with no request needed.
    io.failing = null;
    scheduler.fireTimeouts();
    await expect.poll(async () => (await fetch(`${url}/healthz`)).status).toBe(200);
    expect(infos.filter((line) => line.includes('succeed again'))).toHaveLength(1);
    expect((await post(channel.url, 'kept after', 'dlv_4')).status).toBe(503);

    // Only the events the sender was told were buffered survive, here and after a restart.
    await relay.close();
    const again = await startRelay({ file });
    const app = await startLocalApp();
    cleanups.push(app.close);
    const listener = await connectListener({ relayUrl: again.url, channel: channel.channel, token: channel.token, forwardTo: `${app.url}/echo` });
    cleanups.push(() => listener.close());
    await expect.poll(() => app.echoes.length).toBe(2);
    expect(app.echoes.map((echo) => echo.body.toString())).toEqual(['kept before', 'kept after']);
  });

  it('answers 507 relay_full with Retry-After at each bound: channels, relay bytes, channel bytes', async () => {
    const { url } = await startRelay({ file: false, maxChannels: 2, maxTotalBufferedBytes: 3000, maxBufferedBytes: 2000 });
    const [a, b] = [await createChannel(url), await createChannel(url)];
    const third = await fetch(`${url}/channels`, { method: 'POST' });
    expect(third.status).toBe(507);
    expect(third.headers.get('retry-after')).toBe('10');
    expect(((await third.json()) as { code: string }).code).toBe('relay_full');

    const body = 'q'.repeat(900); // 1,200 bytes as base64
    expect((await post(a.url, body, 'a1')).status).toBe(503);
    expect(await post(a.url, body, 'a2')).toMatchObject({ status: 507, retryAfter: '10', body: { code: 'relay_full', detail: expect.stringMatching(/channel buffer/) } });
    expect((await post(b.url, body, 'b1')).status).toBe(503);
    expect(await post(b.url, 'q'.repeat(600), 'b2')).toMatchObject({ status: 507, body: { code: 'relay_full', detail: expect.stringMatching(/across channels/) } });

    // Once channel a's event is delivered and acknowledged, its bytes may go to make room.
    const app = await startLocalApp();
    cleanups.push(app.close);
    const listener = await connectListener({ relayUrl: url, channel: a.channel, token: a.token, forwardTo: `${app.url}/echo` });
    cleanups.push(() => listener.close());
    await expect.poll(() => app.echoes.length).toBe(1);
    await expect.poll(async () => (await post(b.url, 'q'.repeat(600), 'b2')).status).toBe(503);
    const health = (await (await fetch(`${url}/healthz`)).json()) as { bufferedBytes: number };
    expect(health.bufferedBytes).toBeLessThanOrEqual(3000);
  });

  it('refuses a second relay on the same data file', async () => {
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    await startRelay({ file: `${dir}/relay.json` });
    await expect(createRelayServer({ file: `${dir}/relay.json` }).open()).rejects.toMatchObject({ code: 'file_locked' });
  });
});
