// Issue 20 item 12: what a stateless endpoint advertises and counts. It never sends list_changed
// notifications, so it does not advertise them; GET (405) and `notifications/initialized` cost nothing,
// so they do not count against the 60 requests a minute (the MCP conformance suite tripped it).
import { describe, expect, it } from 'vitest';
import type { StartedService } from '../../../src/service/http/app.js';
import { connect, start } from './fixtures.js';

const post = (svc: StartedService, message: unknown) =>
  fetch(`${svc.origin}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify(message),
  });

describe('assistant endpoint capabilities and counting', () => {
  it('does not advertise tools.listChanged, to 2025-era and 2026 clients alike', async () => {
    const svc = await start();
    const legacy = await connect(svc, 'legacy');
    expect(legacy.getServerCapabilities()?.tools).toEqual({ listChanged: false });
    const modern = await connect(svc, 'modern');
    expect(modern.getServerCapabilities()?.tools?.listChanged).not.toBe(true);
  });

  it('does not count notifications/initialized nor the 405 GET and DELETE against the 60 a minute', async () => {
    const svc = await start();
    for (let i = 0; i < 80; i++) {
      expect((await post(svc, { jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    }
    for (let i = 0; i < 20; i++) {
      for (const method of ['GET', 'DELETE']) {
        const res = await fetch(`${svc.origin}/mcp`, { method, headers: { authorization: `Bearer ${svc.apiKey}`, accept: 'text/event-stream' } });
        expect(res.status).toBe(405);
      }
    }
    for (let i = 1; i <= 60; i++) {
      const res = await post(svc, { jsonrpc: '2.0', id: i, method: 'tools/list', params: {} });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(60 - i));
    }
    const over = await post(svc, { jsonrpc: '2.0', id: 61, method: 'tools/list', params: {} });
    expect(over.status).toBe(429);
    expect(((await over.json()) as { code: string }).code).toBe('rate_limit_exceeded');
    // Other notifications and batches still count.
    expect((await post(svc, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } })).status).toBe(429);
    expect((await post(svc, [{ jsonrpc: '2.0', method: 'notifications/initialized' }])).status).toBe(429);
    // Without a credential, an uncounted message is still a 401.
    expect((await fetch(`${svc.origin}/mcp`, { method: 'GET' })).status).toBe(401);
  });
});
