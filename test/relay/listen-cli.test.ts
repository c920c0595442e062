// `cliphook listen` and issue 10: what the developer sees for each refusal, re-signing and stale refusals,
// the capability warning, and errors that name the flag.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createChannel, createRelayServer, RelayError, sign } from 'cliphook';
import { listen as listenCommand, type ListenIo } from '../../src/cli/commands/listen.js';
import { main } from '../../src/cli/main.js';
import { eventText, listen, SECRET, signedHeaders, startLocalApp, testdir } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const plain = (text: string) => text;
const palette = { bold: plain, dim: plain, green: plain, yellow: plain, red: plain, cyan: plain };

function recordingIo() {
  const controller = new AbortController();
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const push = (line: string) => {
    lines.push(line);
    for (const waiter of [...waiters]) if (waiter.pattern.test(line)) (waiters.splice(waiters.indexOf(waiter), 1), waiter.resolve(line));
  };
  const io: ListenIo = { out: push, err: push, signal: controller.signal, now: () => new Date(2026, 10, 21, 23, 59, 1), palette };
  const waitFor = (pattern: RegExp) => new Promise<string>((resolve) => (lines.find((line) => pattern.test(line)) ? resolve(lines.find((line) => pattern.test(line))!) : waiters.push({ pattern, resolve })));
  return { io, lines, waitFor, stop: () => controller.abort() };
}

async function startRelay(options: Parameters<typeof createRelayServer>[0] = {}) {
  const relay = createRelayServer({ file: false, ...options });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  return { url, channel: await createChannel(url) };
}

/** Runs `listen` until `body` has run, and returns its lines. */
async function run(flags: Record<string, unknown>, body: (wait: (pattern: RegExp) => Promise<string>) => Promise<void>) {
  const { io, lines, waitFor, stop } = recordingIo();
  const running = listenCommand({ state: '/nonexistent', ...flags } as Parameters<typeof listenCommand>[0], io);
  await waitFor(flags.json ? /"type":"ready"/ : /^Ready!/);
  await body(waitFor);
  stop();
  await running;
  return lines;
}

function stderrLines() {
  const written: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (written.push(String(chunk)), true));
  return written;
}

describe('cliphook listen: refusals, re-signing and warnings', () => {
  it('says on start that the channel URL is a capability when there is no --secret, and not with one', async () => {
    const { url, channel } = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const flags = { forwardTo: `${app.url}/webhooks`, relay: url, channel: channel.channel, token: channel.token };
    const without = await run(flags, async () => undefined);
    expect(without.some((line) => /warning: the channel URL is a capability: anyone who has it .*--secret/.test(line))).toBe(true);
    const withSecret = await run({ ...flags, secret: SECRET }, async () => undefined);
    expect(withSecret.some((line) => /warning/.test(line))).toBe(false);
    const json = await run({ ...flags, json: true, methods: ['GET,POST'] }, async () => undefined);
    expect(json.map((line) => JSON.parse(line)).filter((record) => record.type === 'warning').map((record) => record.code)).toEqual(['no_secret', 'methods']);
  });

  it('shows each refusal on its reply line, in text and JSON, with whole milliseconds', async () => {
    const { url, channel } = await startRelay();
    const app = await startLocalApp();
    cleanups.push(app.close);
    const flags = { forwardTo: `${app.url}/webhooks`, relay: url, channel: channel.channel, token: channel.token, secret: SECRET };
    const body = eventText(1);
    const text = await run(flags, async (wait) => {
      await fetch(`${channel.url}/x`);
      await fetch(channel.url, { method: 'POST', body, headers: { ...signedHeaders(body, 'dlv_forged'), 'x-service-signature': sign(body, 'whsec_guess') } });
      await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_ok') });
      await wait(/<-- \[200\]/);
    });
    expect(text).toContain(`23:59:01  <-- [405] GET ${app.url}/webhooks/x (0 ms) refused by listen, not forwarded: method_not_allowed listen forwards only POST (listen --methods).`);
    expect(text).toContain('23:59:01  --> video.completed [dlv_forged]  sig ✗');
    expect(text.some((line) => /<-- \[401\] POST .* refused by listen, not forwarded: invalid_signature/.test(line))).toBe(true);
    expect(app.handled.map(({ context }) => context.deliveryId)).toEqual(['dlv_ok']);

    const json = await run({ ...flags, json: true }, async (wait) => {
      // (A path such as /..%2fadmin is refused by the relay itself now, before listen sees it: path-guard.test.ts.)
      await fetch(`${channel.url}/admin`, { method: 'DELETE' });
      await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_ok2') });
      await wait(/"type":"reply".*"status":200/);
    });
    const replies = json.map((line) => JSON.parse(line)).filter((record) => record.type === 'reply');
    expect(replies[0]).toMatchObject({ status: 405, refused: { code: 'method_not_allowed' }, stale: false, resigned: false });
    expect(replies.every((record) => Number.isInteger(record.durationMs))).toBe(true);
  });

  it('marks a re-signed event (re-signed) on both lines', async () => {
    // The relay's clock is an hour behind: the event it takes now was signed an hour before listen's clock.
    const { url, channel } = await startRelay({ clock: () => Date.now() - 3_600_000 });
    const app = await startLocalApp();
    cleanups.push(app.close);
    const body = eventText(2, { deliveredAt: new Date(Date.now() - 3_600_000).toISOString() });
    const lines = await run({ forwardTo: `${app.url}/webhooks`, relay: url, channel: channel.channel, token: channel.token, secret: SECRET }, async (wait) => {
      await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_old') });
      await wait(/<-- \[200\]/);
    });
    expect(lines).toContain('23:59:01  --> video.completed [dlv_old]  sig ✓ (re-signed)');
    expect(lines.some((line) => /<-- \[200\] POST .* \(\d+ ms\) \(re-signed\)$/.test(line))).toBe(true);
  });

  it('says a stale refusal was not taken as the answer and how to fix it, without --secret', async () => {
    const { url, channel } = await startRelay();
    const app = await listen((req, res) => {
      req.resume();
      res.writeHead(400, { 'content-type': 'application/problem+json' }).end('{"code":"stale_delivery","status":400}');
    });
    cleanups.push(app.close);
    let status = 0;
    const lines = await run({ forwardTo: app.url, relay: url, channel: channel.channel, token: channel.token }, async (wait) => {
      status = (await fetch(channel.url, { method: 'POST', body: '{}' })).status;
      await wait(/<-- \[400\]/);
    });
    expect(status).toBe(502); // not a final 4xx: the sender retries
    expect(lines.some((line) => /<-- \[400\] POST .* stale_delivery, not acknowledged: the sender gets 502 and retries; restart listen with --secret/.test(line))).toBe(true);
  });
});

describe('cliphook listen: errors', () => {
  it('names the flag, not the library option, in one line with exit 2', async () => {
    const { url } = await startRelay();
    const written = stderrLines();
    const argv = ['node', 'cliphook', 'listen', '--relay', url, '--channel', 'c', '--token', 't'];
    expect(await main([...argv, '--forward-to', 'localhost:3000'])).toBe(2);
    expect(await main([...argv, '--forward-to', 'http://127.0.0.1:9/x', '--events', 'bad name'])).toBe(2);
    expect(await main([...argv, '--forward-to', 'http://127.0.0.1:9/x', '--methods', 'GE T'])).toBe(2);
    expect(await main([...argv, '--forward-to', 'http://127.0.0.1:9/x', '--forward-invalid'])).toBe(2);
    expect(written).toHaveLength(4);
    expect(written[0]).toMatch(/^cliphook: Expected --forward-to to be an absolute http\/https URL, got "localhost:3000"\.\n$/);
    expect(written[1]).toMatch(/--events/);
    expect(written[2]).toMatch(/--methods/);
    expect(written[3]).toMatch(/--forward-invalid needs --secret/);
    expect(written.join('')).not.toMatch(/forwardTo|`events`|`methods`/);
  });

  it('says a wrong --admin-token is wrong, a missing one is missing, and an unreachable relay is unreachable', async () => {
    const relay = createRelayServer({ file: false, adminToken: 'adm_right' });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    const { dir, cleanup } = await testdir();
    cleanups.push(cleanup);
    const written = stderrLines();
    const argv = ['node', 'cliphook', 'listen', '--forward-to', 'http://127.0.0.1:9/x', '--state', `${dir}/listen.json`];
    expect(await main([...argv, '--relay', url, '--admin-token', 'adm_wrong'])).toBe(1);
    expect(await main([...argv, '--relay', url])).toBe(1);
    const gone = createRelayServer({ file: false });
    const { url: goneUrl } = await gone.listen(0, '127.0.0.1');
    await gone.close();
    expect(await main([...argv, '--relay', goneUrl])).toBe(1);
    expect(written[0]).toMatch(/the admin token is wrong\. \(check --admin-token/);
    expect(written[0]).not.toMatch(/needs/);
    expect(written[1]).toMatch(/needs its admin token\. \(pass --admin-token\)/);
    expect(written[2]).toMatch(/Cannot reach the relay at .*ECONNREFUSED/);
    await expect(createChannel(goneUrl)).rejects.toBeInstanceOf(RelayError);
    await expect(createChannel(goneUrl)).rejects.toMatchObject({ code: 'relay_unreachable' });
    await expect(createChannel(url, { adminToken: 'adm_wrong' })).rejects.toMatchObject({ code: 'invalid_token', status: 401 });
  });
});
