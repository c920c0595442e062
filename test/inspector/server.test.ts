// The inspector's HTTP side (issue 14): loopback Host only (DNS rebinding), writes only from its own page,
// the JSON API of the listen side, Replay over HTTP, and server-sent events.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ListenRecorder } from '../../src/inspector/listen-recorder.js';
import { startInspector, type Inspector } from '../../src/inspector/server.js';
import { exchangeFixture, recordingApp } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup({ forwardTo = 'http://127.0.0.1:9/webhooks', maxBodyBytes }: { forwardTo?: string; maxBodyBytes?: number } = {}) {
  const recorder = await ListenRecorder.open({ forwardTo, log: false, secret: 'whsec_inspector', ...(maxBodyBytes ? { maxBodyBytes } : {}) });
  const inspector = await startInspector({ port: 0, listen: recorder });
  cleanups.push(() => inspector.close());
  return { recorder, inspector };
}

/** A raw HTTP request, so the test chooses the Host header (fetch does not let it). */
function raw(inspector: Inspector, { method = 'GET', path = '/api/info', headers = {}, body }: { method?: string; path?: string; headers?: Record<string, string>; body?: string }) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: inspector.port, method, path, headers: { host: `127.0.0.1:${inspector.port}`, ...headers }, setHost: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = { 'content-type': 'application/json' };

describe('inspector: who may use it', () => {
  it('binds 127.0.0.1 and answers only a loopback Host with its own port: anything else is 403 host_not_allowed', async () => {
    const { inspector } = await setup();
    expect(inspector.url).toBe(`http://127.0.0.1:${inspector.port}/`);
    for (const host of [`127.0.0.1:${inspector.port}`, `localhost:${inspector.port}`, `LOCALHOST:${inspector.port}`, `[::1]:${inspector.port}`]) {
      expect((await raw(inspector, { headers: { host } })).status).toBe(200);
    }
    for (const host of [`evil.example:${inspector.port}`, 'evil.example', `127.0.0.1:${inspector.port + 1}`, '127.0.0.1', `localhost.evil.example:${inspector.port}`, `192.168.1.10:${inspector.port}`]) {
      for (const path of ['/', '/api/info', '/api/listen/exchanges', '/api/stream', '/assets/inspector.js']) {
        const res = await raw(inspector, { path, headers: { host } });
        expect(res.status, `${host} ${path}`).toBe(403);
        expect(res.headers['content-type']).toBe('application/problem+json');
        expect(JSON.parse(res.text)).toMatchObject({ code: 'host_not_allowed', status: 403 });
      }
    }
  });

  it('answers the API to its own page only: a cross-site or same-site read is 403, and HEAD of the stream opens none', async () => {
    const { inspector } = await setup({});
    for (const site of ['cross-site', 'same-site']) {
      const res = await raw(inspector, { method: 'GET', path: '/api/stream', headers: { 'sec-fetch-site': site } });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text).code).toBe('origin_not_allowed');
    }
    expect((await raw(inspector, { method: 'GET', path: '/api/info', headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(200);
    const head = await raw(inspector, { method: 'HEAD', path: '/api/stream', headers: {} });
    expect(head.status).toBe(200);
  });

  it('refuses writes a page of another origin could send: a foreign Origin or Sec-Fetch-Site (403), a body that is not JSON (415); nothing is replayed', async () => {
    const app = await recordingApp();
    cleanups.push(app.close);
    const { recorder, inspector } = await setup({ forwardTo: `${app.url}/webhooks` });
    const { id } = recorder.record({ ...exchangeFixture(1), url: `${app.url}/webhooks` });
    const path = `/api/listen/exchanges/${id}/replay`;
    const refusals: Array<[Record<string, string>, number, string]> = [
      [{ ...json, origin: 'http://evil.example' }, 403, 'origin_not_allowed'],
      [{ ...json, origin: `http://127.0.0.1:${inspector.port + 1}` }, 403, 'origin_not_allowed'],
      [{ ...json, origin: 'null' }, 403, 'origin_not_allowed'],
      [{ ...json, 'sec-fetch-site': 'cross-site' }, 403, 'origin_not_allowed'],
      [{ 'content-type': 'text/plain' }, 415, 'unsupported_media_type'],
      [{ 'content-type': 'application/x-www-form-urlencoded', origin: `http://127.0.0.1:${inspector.port}` }, 415, 'unsupported_media_type'],
      [{}, 415, 'unsupported_media_type'],
    ];
    for (const [headers, status, code] of refusals) {
      const res = await raw(inspector, { method: 'POST', path, headers, body: '{}' });
      expect(res.status, JSON.stringify(headers)).toBe(status);
      expect(JSON.parse(res.text).code).toBe(code);
    }
    expect(app.received).toHaveLength(0);
    // The page's own request: same origin, JSON.
    const ok = await raw(inspector, { method: 'POST', path, headers: { ...json, origin: `http://localhost:${inspector.port}`, 'sec-fetch-site': 'same-origin' }, body: '{}' });
    expect(ok.status).toBe(201);
    expect(app.received).toHaveLength(1);
  });

  it('serves the page and its files with a CSP that allows nothing from elsewhere; other methods are 405', async () => {
    const { inspector } = await setup();
    for (const path of ['/', '/listen', '/service']) {
      const page = await fetch(new URL(path, inspector.url));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(await page.text()).toContain('<script type="module" src="/assets/inspector.js">');
    }
    const script = await fetch(new URL('/assets/inspector.js', inspector.url));
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain("import { listenPage } from './listen-page.js';");
    for (const module of ['dom', 'live', 'windowed-list', 'listen-page', 'service-page']) {
      expect((await fetch(new URL(`/assets/${module}.js`, inspector.url))).status, module).toBe(200);
    }
    expect(await (await fetch(new URL('/assets/windowed-list.js', inspector.url))).text()).toContain('export class WindowedList');
    // Only the page's own files: not the HTML under another name, nothing outside the folder.
    for (const path of ['/assets/index.html', '/assets/../package.json', '/assets/%2e%2e/package.json', '/assets/']) {
      expect((await fetch(new URL(path, inspector.url))).status, path).toBe(404);
    }
    expect((await fetch(new URL('/assets/inspector.css', inspector.url))).headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(new URL('/nope', inspector.url))).status).toBe(404);
    const put = await raw(inspector, { method: 'PUT', path: '/api/info' });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD, POST');
  });
});

describe('inspector: the listen API', () => {
  it('lists summaries oldest first, filters by event and status, and shows one exchange with its headers and bodies', async () => {
    const { recorder, inspector } = await setup();
    for (let n = 1; n <= 20; n++) recorder.record(exchangeFixture(n));
    const all = await (await fetch(new URL('/api/listen/exchanges', inspector.url))).json();
    expect(all.items).toHaveLength(20);
    expect(all.items[0]).toMatchObject({ id: 1, eventName: 'video.completed', deliveryId: 'dlv_000001', videoId: '1', status: 200, outcome: '2xx', durationMs: 3, signatureValid: true });
    expect(all.items[0]).not.toHaveProperty('request');
    const failed = await (await fetch(new URL('/api/listen/exchanges?status=5xx', inspector.url))).json();
    expect(failed.items.map((item: { id: number }) => item.id)).toEqual([10, 20]);
    const named = await (await fetch(new URL('/api/listen/exchanges?event=video.failed', inspector.url))).json();
    expect(named.items.map((item: { id: number }) => item.id)).toEqual([10, 20]);
    const bad = await fetch(new URL('/api/listen/exchanges?status=7xx', inspector.url));
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe('invalid_parameter');

    const detail = await (await fetch(new URL('/api/listen/exchanges/3', inspector.url))).json();
    expect(detail.request.headers).toEqual(['Content-Type', 'application/json', 'X-Service-Event', 'video.completed']);
    expect(detail.request.body).toMatchObject({ size: exchangeFixture(3).request.body.size, truncated: false, text: exchangeFixture(3).request.body.bytes.toString() });
    expect(Buffer.from(detail.request.body.base64, 'base64').equals(exchangeFixture(3).request.body.bytes)).toBe(true);
    expect(detail.reply).toMatchObject({ status: 200, headers: ['content-type', 'application/json'], body: { text: '{"ok":true}' } });
    const missing = await fetch(new URL('/api/listen/exchanges/999', inspector.url));
    expect(missing.status).toBe(404);
    expect((await missing.json()).code).toBe('not_found');
  });

  it('shows a body that is not UTF-8 as base64 only', async () => {
    const { recorder, inspector } = await setup();
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    const base = exchangeFixture(1);
    const { id } = recorder.record({ ...base, request: { headers: [], body: { bytes, size: 4, truncated: false } } });
    const detail = await (await fetch(new URL(`/api/listen/exchanges/${id}`, inspector.url))).json();
    expect(detail.request.body).toEqual({ size: 4, truncated: false, text: null, base64: bytes.toString('base64') });
  });

  it('replays over HTTP: 201 with the new row; 409 replay_unavailable for a body not kept whole or an event listen refused; 404 for an unknown one', async () => {
    const app = await recordingApp();
    cleanups.push(app.close);
    const { recorder, inspector } = await setup({ forwardTo: `${app.url}/webhooks` });
    const post = (id: number, body: unknown = {}) => fetch(new URL(`/api/listen/exchanges/${id}/replay`, inspector.url), { method: 'POST', headers: json, body: JSON.stringify(body) });
    const base = { ...exchangeFixture(1), url: `${app.url}/webhooks?x=1` };
    const { id } = recorder.record(base);
    const made = await post(id);
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ id: id + 1, replayOf: id, edited: false, status: 200, outcome: '2xx' });
    expect(app.received[0]!.body.equals(base.request.body.bytes)).toBe(true);
    expect(app.received[0]!.url).toBe('/webhooks?x=1');

    const truncated = recorder.record({ ...base, request: { ...base.request, body: { bytes: Buffer.from('{"a'), size: 5000, truncated: true } } });
    const refusedTruncated = await post(truncated.id);
    expect(refusedTruncated.status).toBe(409);
    expect(await refusedTruncated.json()).toMatchObject({ code: 'replay_unavailable', detail: expect.stringMatching(/5000 bytes/) });
    const refused = recorder.record({ ...base, reply: { ...base.reply!, status: 401, refused: { code: 'invalid_signature', detail: 'x' } } });
    const refusedRefused = await post(refused.id);
    expect(refusedRefused.status).toBe(409);
    expect((await refusedRefused.json()).detail).toMatch(/listen refused it \(invalid_signature\)/);
    expect((await post(424242)).status).toBe(404);
    expect((await post(id, { edits: { body: 12 } })).status).toBe(400);
    expect((await post(id, { edits: 'x' })).status).toBe(400);
    const notJson = await fetch(new URL(`/api/listen/exchanges/${id}/replay`, inspector.url), { method: 'POST', headers: json, body: '{nope' });
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).code).toBe('invalid_json');
    expect(app.received).toHaveLength(1);
  });

  it('sends each new or changed row to every page as a server-sent event, starting with hello', async () => {
    const { recorder, inspector } = await setup();
    const controller = new AbortController();
    cleanups.push(async () => controller.abort());
    const res = await fetch(new URL('/api/stream', inspector.url), { signal: controller.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) text += (await reader.read()).value ?? '';
    };
    await until(/event: hello\ndata: .*\n\n/);
    expect(JSON.parse(/event: hello\ndata: (.*)\n/.exec(text)![1]!)).toMatchObject({ pages: ['listen'], listen: { forwardTo: 'http://127.0.0.1:9/webhooks', secret: true } });
    recorder.record(exchangeFixture(7));
    await until(/event: exchange\ndata: .*\n\n/);
    expect(JSON.parse(/event: exchange\ndata: (.*)\n/.exec(text)![1]!)).toMatchObject({ summary: { id: 1, deliveryId: 'dlv_000007', status: 200 }, oldest: 1 });
  });
});
