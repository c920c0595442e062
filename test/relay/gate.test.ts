// Issue 10, finding 1: whoever has the channel URL must not reach any method or path of the local app.
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { connectListener, createChannel, createRelayServer, sign, type ListenerReply } from 'cliphook';
import { encodeFrame, parseClientFrame, type EventFrame } from '../../src/relay/frames.js';
import { refusalFor, signatureOf, unsafePath } from '../../src/relay/gate.js';
import { ALLOWED_PATHS, eventText, listen, REFUSED_PATHS, SECRET, signedHeaders } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A local app that records every request it gets. */
async function recordingApp() {
  const seen: Array<{ method: string; url: string; body: string }> = [];
  const app = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body: Buffer.concat(chunks).toString() });
      res.end('ok');
    });
  });
  cleanups.push(app.close);
  return { url: app.url, seen };
}

async function relayWithListener(forwardTo: string, extra: object = {}) {
  const relay = createRelayServer({ file: false });
  const { url } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const channel = await createChannel(url);
  const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo, ...extra });
  cleanups.push(() => listener.close());
  const replies: ListenerReply[] = [];
  listener.on('reply', (reply) => replies.push(reply));
  return { channel, listener, replies };
}

describe('unsafePath', () => {
  const forwardTo = new URL('http://localhost:3000/hooks');
  // Every path the relay's ingress refuses, and more: the listener's check must stand alone.
  it.each([
    ...REFUSED_PATHS,
    '/..', '/../admin', '/a/../../admin', '/%2e%2e/admin', '/%2E%2e/admin', '/.%2E/admin', '/%2e./x', '/./x', '/%2e',
    '/%252e%252e/admin', '/..;/admin', '/a\\..\\admin', '/a\\b', '/a%2fb', '/a%2F..%2Fadmin', '/a%5cb', '/a%255c..', '/x/%2E',
  ])('refuses %s', (path) => {
    expect(unsafePath(forwardTo, { path, query: '' })).not.toBeNull();
  });
  it('reads //host/x as a path under a root forwardTo, never as another host', () => {
    expect(unsafePath(new URL('http://localhost:3000/'), { path: '//evil.example/x', query: '' })).toBeNull();
    expect(unsafePath(new URL('http://localhost:3000/hooks'), { path: '//evil.example/..', query: '' })).not.toBeNull();
  });
  it.each([...ALLOWED_PATHS, '/x', '/x/y.json', '/..x', '/x..', '/.well-known/a', '/%41', '/a/...'])('lets %s through', (path) => {
    expect(unsafePath(forwardTo, { path, query: '?a=../b' })).toBeNull();
  });
});

describe('signatureOf and refusalFor', () => {
  const body = Buffer.from('{"event":"video.completed"}');
  const good = sign(body, SECRET);
  const verdict = (...values: string[]) => signatureOf({ body, headers: values.flatMap((value) => ['X-Service-Signature', value]) }, SECRET);
  const options = { forwardTo: new URL('http://localhost:3000/hooks'), methods: new Set(['POST']), secret: SECRET, forwardInvalid: false };
  const frame: EventFrame = { type: 'event', seq: 1, receivedAt: 0, method: 'POST', path: '', query: '', headers: [], body, backlog: false, replay: false };
  const answer = (...values: string[]) => {
    const refusal = refusalFor(frame, verdict(...values), options);
    return refusal && [refusal.status, refusal.code];
  };

  it('answers as the receiver does: 401 missing, 400 malformed or repeated, 401 invalid', () => {
    expect(answer(good)).toBeNull();
    expect(answer()).toEqual([401, 'missing_signature']);
    expect(answer('')).toEqual([401, 'missing_signature']);
    expect(answer('sha256=zz')).toEqual([400, 'malformed_signature']);
    expect(answer(good.toUpperCase())).toEqual([400, 'malformed_signature']); // the prefix must be lower-case
    expect(answer(`${good}, ${good}`)).toEqual([400, 'malformed_signature']);
    // Two headers: a receiver behind Node reads them joined with ", ", never as the first or the second.
    expect(answer(good, good)).toEqual([400, 'malformed_signature']);
    expect(answer('', good)).toEqual([400, 'malformed_signature']);
    expect(answer(good, '')).toEqual([400, 'malformed_signature']);
    expect(answer(sign(body, 'whsec_guess'))).toEqual([401, 'invalid_signature']);
  });

  it('says which secret verified, and nothing without a secret', () => {
    const headers = ['x-service-signature', sign(body, 'whsec_old')];
    expect(signatureOf({ body, headers }, ['whsec_new', 'whsec_old'])).toEqual({ valid: true, problem: null, secret: 'whsec_old' });
    expect(signatureOf({ body, headers }, ['whsec_new'])).toEqual({ valid: false, problem: 'invalid_signature', secret: null });
    expect(signatureOf({ body, headers }, undefined)).toEqual({ valid: null, problem: null, secret: null });
    expect(refusalFor(frame, signatureOf({ body, headers: [] }, SECRET), { ...options, forwardInvalid: true })).toBeNull();
  });
});

describe('listen answers what it will not forward, and the local app never sees it', () => {
  it('answers a GET with 405 method_not_allowed and Allow: POST; --methods widens it', async () => {
    const app = await recordingApp();
    const { channel, replies } = await relayWithListener(`${app.url}/hooks`);
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${channel.url}/x`, { method, ...(method === 'GET' ? {} : { body: 'hi' }) });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toMatchObject({ code: 'method_not_allowed', status: 405 });
    }
    expect(app.seen).toEqual([]);
    expect(replies.map((reply) => reply.refused?.code)).toEqual(Array(4).fill('method_not_allowed'));

    const wide = await relayWithListener(`${app.url}/hooks`, { methods: ['get', 'POST'] });
    expect((await fetch(`${wide.channel.url}/x?y=1`)).status).toBe(200);
    const put = await fetch(wide.channel.url, { method: 'PUT', body: 'x' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(app.seen).toEqual([{ method: 'GET', url: '/hooks/x?y=1', body: '' }]);
  });

  it('answers a path that would leave --forward-to with 400 invalid_path, even when the relay passes it on', async () => {
    // A relay of our own that passes any path on, as an older or another relay might: the listener's check stands alone.
    // All but a path with whitespace, which no event frame can carry (frames.ts closes the socket on it).
    const refused = REFUSED_PATHS.filter((path) => !/\s/.test(path));
    const paths = [...refused, '/ok'];
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => wss.once('listening', resolve));
    cleanups.push(() => new Promise((resolve) => wss.close(resolve)));
    const answers: Array<{ seq: number; status: number; code: string }> = [];
    const told = new Set<string>();
    let allAnswered!: () => void;
    const all = new Promise<void>((resolve) => (allAnswered = resolve));
    let relaySocket!: WebSocket;
    const connected = new Promise<void>((resolve) =>
      wss.on('connection', (socket) => {
        relaySocket = socket;
        socket.on('message', (data, isBinary) => {
          const frame = parseClientFrame(data, isBinary);
          if (frame.type !== 'reply') return;
          const text = frame.body.toString();
          answers.push({ seq: frame.seq, status: frame.status, code: text.startsWith('{') ? JSON.parse(text).code : text });
          if (text.startsWith('{')) told.add(JSON.parse(text).detail);
          if (answers.length === paths.length) allAnswered();
        });
        socket.send(JSON.stringify({ type: 'hello', channel: 'c', listener: 'l', pingIntervalMs: 10_000 }));
        resolve();
      }),
    );
    const app = await recordingApp();
    const listener = await connectListener({ relayUrl: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`, channel: 'c', token: 't', forwardTo: `${app.url}/hooks` });
    cleanups.push(() => listener.close());
    const reasons = new Map<number, string | undefined>();
    listener.on('reply', (reply) => reasons.set(reply.event.seq, reply.refused?.detail));
    await connected;
    paths.forEach((path, i) => {
      const frame: EventFrame = { type: 'event', seq: i + 1, receivedAt: Date.now(), method: 'POST', path, query: '', headers: [], body: Buffer.from('{}'), backlog: false, replay: false };
      relaySocket.send(encodeFrame(frame));
    });
    await all;
    expect(answers.sort((a, b) => a.seq - b.seq)).toEqual([
      ...refused.map((_, i) => ({ seq: i + 1, status: 400, code: 'invalid_path' })),
      { seq: paths.length, status: 200, code: 'ok' },
    ]);
    expect(app.seen.map((request) => request.url)).toEqual(['/hooks/ok']);
    // The anonymous sender reads one fixed sentence, never why (a reason can name the local path); listen's own line says why.
    expect([...told]).toEqual(['The path is not forwarded.']);
    expect(reasons.get(refused.indexOf('/../admin/users') + 1)).toBe('The path is not forwarded: a dot segment.');
    expect(reasons.get(paths.length)).toBeUndefined();
  });

  it('with a secret, answers a bad, missing or malformed signature as the receiver does and forwards it only with forwardInvalid', async () => {
    const app = await recordingApp();
    const { channel, replies } = await relayWithListener(`${app.url}/hooks`, { secret: SECRET });
    const body = eventText(1);
    const good = await fetch(channel.url, { method: 'POST', body, headers: signedHeaders(body, 'dlv_good') });
    expect(good.status).toBe(200);
    const forged = await fetch(channel.url, { method: 'POST', body, headers: { ...signedHeaders(body, 'dlv_forged'), 'x-service-signature': sign(body, 'whsec_guess') } });
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ code: 'invalid_signature', status: 401 });
    const unsigned = await fetch(channel.url, { method: 'POST', body, headers: { 'x-service-delivery': 'dlv_unsigned' } });
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toMatchObject({ code: 'missing_signature' });
    const malformed = await fetch(channel.url, { method: 'POST', body, headers: { ...signedHeaders(body, 'dlv_malformed'), 'x-service-signature': 'sha256=not-hex' } });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: 'malformed_signature', status: 400 });
    expect(app.seen.map((request) => request.body)).toEqual([body]);
    expect(replies.map((reply) => [reply.event.signatureValid, reply.refused?.code ?? null])).toEqual([
      [true, null],
      [false, 'invalid_signature'],
      [false, 'missing_signature'],
      [false, 'malformed_signature'],
    ]);

    const debugging = await relayWithListener(`${app.url}/hooks`, { secret: SECRET, forwardInvalid: true });
    const through = await fetch(debugging.channel.url, { method: 'POST', body, headers: { 'x-service-delivery': 'dlv_unsigned' } });
    expect(through.status).toBe(200);
    expect(app.seen).toHaveLength(2);
    expect(debugging.replies[0]).toMatchObject({ refused: null, event: { signatureValid: false } });
  });
});
