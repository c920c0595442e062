import fc from 'fast-check';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { createServiceApp, type ServiceApp } from '../../../src/service/http/app.js';
import { requestTarget } from '../../../src/service/http/dispatch.js';

const apps: ServiceApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function app() {
  const made = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
  apps.push(made);
  return { app: made, auth: `Bearer ${made.service.first().apiKey}` };
}

/** A route's template as its segments: `null` for a `{param}`. */
const segmentsOf = (template: string) => template.split('/').slice(1).map((segment) => (segment.startsWith('{') ? null : segment));

/**
 * Every pair of the router's templates where a fixed segment stands where the other has a parameter and the
 * rest agrees (`/v1/videos/batch` and `/v1/videos/{id}`): the fixed one's concrete path, and both templates.
 */
function clashes(routes: readonly string[]): Array<{ path: string; fixed: string; param: string }> {
  const templates = [...new Set(routes.map((route) => route.slice(route.indexOf(' ') + 1)))];
  const found: Array<{ path: string; fixed: string; param: string }> = [];
  for (const fixed of templates) {
    if (fixed.includes('{')) continue;
    for (const param of templates) {
      const [a, b] = [segmentsOf(fixed), segmentsOf(param)];
      if (param === fixed || a.length !== b.length) continue;
      if (b.every((segment, i) => segment === null || segment === a[i])) found.push({ path: fixed, fixed, param });
    }
  }
  return found;
}

describe('the router (issue 29 item 12)', () => {
  it('routes GET and DELETE /v1/videos/batch to the batch path, not to a clip whose id is "batch": 405 Allow: POST', async () => {
    const { app: handler, auth } = await app();
    for (const method of ['get', 'delete'] as const) {
      const res = await request(handler)[method]('/v1/videos/batch').set('authorization', auth);
      expect(res.status, method).toBe(405);
      expect(res.body, method).toMatchObject({ code: 'method_not_allowed', detail: '/v1/videos/batch takes POST.' });
      expect(res.headers.allow, method).toBe('POST');
    }
    // HEAD is GET without the body (RFC 9110 §9.3.2): refused the same way.
    expect(await request(handler).head('/v1/videos/batch').set('authorization', auth)).toMatchObject({ status: 405, headers: { allow: 'POST' } });
    // The batch path itself, and a clip id beside it, still answer as before.
    expect((await request(handler).post('/v1/videos/batch').set('authorization', auth).send({ items: [{ prompt: 'a fox' }] })).status).toBe(207);
    const clip = await request(handler).get('/v1/videos/999').set('authorization', auth);
    expect(clip).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(clip.body.detail, 'the route\'s own 404, not the router\'s').not.toBe('Nothing at /v1/videos/999.');
  });

  it('gives every fixed path the router has beside a parameter path only its own methods', async () => {
    const { app: handler, auth } = await app();
    const found = clashes(handler.routes);
    expect(found.map(({ fixed, param }) => `${fixed} ~ ${param}`)).toContain('/v1/videos/batch ~ /v1/videos/{id}');
    for (const { path, fixed, param } of found) {
      const own = handler.routes.filter((route) => route.endsWith(` ${fixed}`)).map((route) => route.slice(0, route.indexOf(' ')));
      const others = handler.routes.filter((route) => route.endsWith(` ${param}`)).map((route) => route.slice(0, route.indexOf(' '))).filter((method) => !own.includes(method));
      for (const method of others) {
        const res = await request(handler)[method.toLowerCase() as 'get' | 'post' | 'delete' | 'put' | 'patch'](path).set('authorization', auth);
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.allow?.split(', ').filter((each) => each !== 'HEAD').sort(), `${method} ${path}`).toEqual([...new Set(own)].sort());
      }
    }
  });

  it('reads a percent-encoded fixed segment as the segment itself', async () => {
    const { app: handler, auth } = await app();
    expect(await request(handler).get('/v1/videos/%62atch').set('authorization', auth)).toMatchObject({ status: 405, headers: { allow: 'POST' } });
    expect(await request(handler).get('/v1/videos/%zz').set('authorization', auth)).toMatchObject({ status: 404, body: { code: 'not_found' } });
  });
});

describe('requestTarget (issue 31: a plain path is not parsed again)', () => {
  /** RFC 3986 §6.2.2: an encoded unreserved character is the character; other encodings in upper-case hex. */
  const normalised = (path: string) => path.replace(/%[0-9a-f]{2}/gi, (encoded) => {
    const char = String.fromCharCode(Number.parseInt(encoded.slice(1), 16));
    return /^[A-Za-z0-9\-._~]$/.test(char) ? char : encoded.toUpperCase();
  });
  /** What the router reads: the WHATWG URL parser's path (its encodings normalised), decoded segments and query. */
  const parsed = (target: string) => {
    let url: URL;
    try {
      url = new URL(target, 'http://service.invalid');
    } catch {
      return null;
    }
    let segments: string[] | 'URIError';
    try {
      segments = url.pathname.split('/').slice(1).map(decodeURIComponent);
    } catch {
      segments = 'URIError';
    }
    return { path: normalised(url.pathname), segments, query: Object.fromEntries(url.searchParams) };
  };
  const read = (target: string) => {
    const found = requestTarget(target);
    if (!found) return null;
    let segments: string[] | 'URIError';
    try {
      segments = found.plain ? found.path.split('/').slice(1) : found.path.split('/').slice(1).map(decodeURIComponent);
    } catch {
      segments = 'URIError';
    }
    return { path: found.path, segments, query: found.query() };
  };

  it('reads every target as the URL parser does: path, segments and query', () => {
    for (const target of ['/', '/v1/videos/123', '/v1/videos/', '//evil.example/v1', '/v1//videos', '/v1/videos/%62atch', '/v1/%76ideos/a%2fb%7e%e9', '/v1/a%2e%2Eb', '/v1/../v1/videos', '/v1/./videos', '/v1/videos?limit=5&status=done', '/v1/videos#x', '/v1\\videos', '/v1/vidéos', '/%zz', 'http://[', '*']) {
      expect(read(target), target).toEqual(parsed(target));
    }
    // Targets made of the characters that matter to a URL parser, and of the plain ones.
    const chars = fc.constantFrom(...'/aZ09_-.%2e7f?&=#\\é :@~'.split(''));
    fc.assert(fc.property(fc.array(chars, { maxLength: 24 }).map((parts) => `/${parts.join('')}`), (target) => {
      expect(read(target)).toEqual(parsed(target));
    }), { numRuns: 2000 });
  });

  it('reads one target the same way every time (URL.canParse, once optimised, refused //é now and then on Node 20)', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(JSON.stringify(requestTarget('//é')?.path ?? null));
    expect([...seen]).toEqual(['"/"']);
  });

  it('takes the plain path of letters, digits, _ and - as it is, and nothing else', () => {
    expect(requestTarget('/v1/videos/123')?.plain).toBe(true);
    for (const target of ['/v1/videos?limit=1', '/v1//videos', '//host', '/v1/./videos', '/v1/%76ideos', 'v1/videos']) expect(requestTarget(target)?.plain ?? false, target).toBe(false);
  });
});

describe('the path a run reads (the router\'s, not the raw target)', () => {
  it('fingerprints an Idempotency-Key and names a problem\'s instance by the path the router matched: /v1/./videos is /v1/videos', async () => {
    const { app: handler, auth } = await app();
    const body = { prompt: 'a fox in the snow', duration: 5 };
    const first = await request(handler).post('/v1/./videos').set('authorization', auth).set('idempotency-key', 'dot-1').send(body);
    expect(first.status).toBe(202);
    // The same key and body on the path as usually written is the same request: replayed, not "reused".
    const again = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'dot-1').send(body);
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    const refused = await request(handler).post('/v1/videos/../videos?x=1').set('authorization', auth).send({ prompt: '' });
    expect(refused.status).toBe(400);
    expect(refused.body.instance).toBe('/v1/videos');
    // A route outside the contract names it the same way.
    const file = await request(handler).get('/files/./assets/nope');
    expect(file.status).toBe(404);
    expect(file.body.instance).toBe('/files/assets/nope');
    // And the assistant endpoint's refusals.
    const mcp = await request(handler).post('/x/../mcp').set('content-type', 'application/json').send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(mcp.status).toBe(401);
    expect(mcp.body.instance).toBe('/mcp');
  });

  it('reads a percent-encoded unreserved character as the character (RFC 3986 §6.2.2.2): /v1/%76ideos is /v1/videos, for routing and the Idempotency-Key', async () => {
    const { app: handler, auth } = await app();
    const body = { prompt: 'a fox in the snow', duration: 5 };
    const first = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'pct-1').send(body);
    expect(first.status).toBe(202);
    for (const path of ['/v1/%76ideos', '/%76%31/vid%65os', '/v1/vide%6fs']) {
      const again = await request(handler).post(path).set('authorization', auth).set('idempotency-key', 'pct-1').send(body);
      expect([again.status, again.headers['idempotent-replayed'], again.body.id], path).toEqual([202, 'true', first.body.id]);
    }
    // The other way round: a key first used on the encoded path replays on the plain one.
    const encoded = await request(handler).post('/v1/%76ideos').set('authorization', auth).set('idempotency-key', 'pct-2').send(body);
    expect(encoded.status).toBe(202);
    const plain = await request(handler).post('/v1/videos').set('authorization', auth).set('idempotency-key', 'pct-2').send(body);
    expect([plain.status, plain.headers['idempotent-replayed'], plain.body.id]).toEqual([202, 'true', encoded.body.id]);
    // A problem names the path as normalised.
    const refused = await request(handler).post('/v1/%76ideos').set('authorization', auth).send({ prompt: '' });
    expect([refused.status, refused.body.instance]).toEqual([400, '/v1/videos']);
  });
});
