// Issue 20 item 4: /mcp checks Origin and Host (MCP transport: an invalid Origin is 403), so a page that
// rebinds its own name to 127.0.0.1 cannot drive the assistant endpoint from a browser.
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { StartedService } from '../../../src/service/http/app.js';
import { start } from './fixtures.js';

/** A POST to /mcp with the Host and Origin a browser would send (fetch cannot set Host). */
function post(svc: StartedService, headers: Record<string, string>, method = 'POST'): Promise<{ status: number; body: string }> {
  const url = new URL(`${svc.origin}/mcp`);
  const payload = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  return new Promise((resolve, reject) => {
    const req = request({ hostname: url.hostname, port: url.port, path: '/mcp', method, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${svc.apiKey}`, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? payload : undefined);
  });
}

const code = (body: string) => (JSON.parse(body) as { code: string }).code;

describe('/mcp Origin and Host', () => {
  it('refuses a foreign Host or Origin with 403, before the key is even looked at', async () => {
    const svc = await start();
    const port = new URL(svc.origin).port;
    const rebinding = await post(svc, { host: 'evil.example.com', origin: 'http://evil.example.com' });
    expect(rebinding.status).toBe(403);
    expect(code(rebinding.body)).toBe('host_not_allowed');
    const page = await post(svc, { host: `127.0.0.1:${port}`, origin: 'https://evil.example' });
    expect(page.status).toBe(403);
    expect(code(page.body)).toBe('origin_not_allowed');
    expect((await post(svc, { host: `127.0.0.1:${port}`, origin: 'null' })).status).toBe(403);
    expect((await post(svc, { host: `evil.example:${port}`, authorization: 'Bearer wrong-key' })).status).toBe(403);
    expect((await post(svc, { host: 'evil.example' }, 'GET')).status).toBe(403);
  });

  it('takes loopback names on any port, and no Origin at all', async () => {
    const svc = await start();
    const port = new URL(svc.origin).port;
    for (const name of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost:6274']) {
      const res = await post(svc, { host: name, origin: `http://${name}` });
      expect(res.status, name).toBe(200);
    }
    expect((await post(svc, { host: `127.0.0.1:${port}` })).status).toBe(200);
    expect((await post(svc, { host: `127.0.0.1:${port}`, origin: 'http://localhost:6274' })).status).toBe(200);
  });

  it('takes the host name of the public URL the service is reached at', async () => {
    const svc = await start();
    svc.service.origin = 'https://clips.example.org';
    expect((await post(svc, { host: 'clips.example.org', origin: 'https://clips.example.org' })).status).toBe(200);
    expect((await post(svc, { host: 'other.example.org', origin: 'https://clips.example.org' })).status).toBe(403);
  });
});
