import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer } from 'cliphook';
import { pathRefusal } from '../../src/relay/path-guard.js';
import { listen, rawRequest } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const REFUSED = [
  '/..', '/../admin/users', '/a/../../admin', '/.', '/./x', '/%2e%2e/admin', '/%2E%2e/admin', '/.%2e/admin', '/%2e./admin', '/%2E',
  '/a%2fb', '/a%2F..%2Fadmin', '/a\\b', '/..\\admin', '/a%5cb', '/a%5C..', '/..;/admin', '/a;jsessionid=1', '/a%3b', '/%00', '/a%00.json',
  '/a%0d%0aX: y', '/%7f', '/%252e%252e/admin', '/%c0%ae%c0%ae/admin', '/\uff0e\uff0e/admin', '/caf\u00e9', '/a#/../admin', '/%u002e%u002e/admin',
];
const ALLOWED = ['', '/', '/hooks/v1', '//double//slash', '/a.b/c..d/...', '/.well-known', '/a%20b', "/p|q^{}!$&'()*+,=:@~", '/%41%2B'];

describe('pathRefusal', () => {
  it('refuses dot segments, encoded slashes, backslashes, path parameters, double encoding, controls and non-ASCII', () => {
    for (const path of REFUSED) expect(pathRefusal(path), path).not.toBeNull();
    for (const path of ALLOWED) expect(pathRefusal(path), path).toBeNull();
  });
});

describe('relay ingress', () => {
  it('answers 400 invalid_path before reading the body, and never forwards the path to the local app', async () => {
    const relay = createRelayServer({ file: false });
    const { url } = await relay.listen(0, '127.0.0.1');
    cleanups.push(() => relay.close());
    const seen: string[] = [];
    const app = await listen((req, res) => {
      seen.push(req.url!);
      req.resume();
      res.end('admin data');
    });
    cleanups.push(app.close);
    const channel = await createChannel(url);
    const listener = await connectListener({ relayUrl: url, channel: channel.channel, token: channel.token, forwardTo: `${app.url}/hook` });
    cleanups.push(() => listener.close());
    const attacks = ['/../admin/users', '/%2e%2E/admin', '/.%2e/admin', '/a%2fb', '/a%5cb', '/a\\..\\admin', '/..;/admin', '/%00', '/%252e%252e/x'];
    for (const rest of attacks) {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const head = await rawRequest(url, `${method} /in/${channel.channel}${rest}?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
        expect(head, `${method} ${rest}`).toMatch(/^HTTP\/1\.1 400 /);
        expect(head).toContain('"code":"invalid_path"');
        expect(head).not.toContain('admin data');
      }
    }
    // Nothing reached the local app; a plain path under the channel still does.
    expect(seen).toEqual([]);
    const ok = await fetch(`${channel.url}/ok`, { method: 'POST', body: 'x' });
    expect(ok.status).toBe(200);
    expect(seen).toEqual(['/hook/ok']);
    expect(relay.listeners).toBe(1);
  });
});
