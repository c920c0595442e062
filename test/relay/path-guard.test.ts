import { afterEach, describe, expect, it } from 'vitest';
import { connectListener, createChannel, createRelayServer } from 'cliphook';
import { pathRefusal } from '../../src/relay/path-guard.js';
import { ALLOWED_PATHS, listen, rawRequest, REFUSED_PATHS } from './fixtures.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('pathRefusal', () => {
  it('refuses dot segments, encoded slashes, backslashes, path parameters, double encoding, controls and non-ASCII', () => {
    for (const path of REFUSED_PATHS) expect(pathRefusal(path), path).not.toBeNull();
    for (const path of ALLOWED_PATHS) expect(pathRefusal(path), path).toBeNull();
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
