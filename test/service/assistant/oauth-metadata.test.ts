// Issue 20 item 5: the discovery documents come from the issuer, never from the request's Host, and the
// bare protected-resource URL serves no document claiming another resource (RFC 9728 §3.3).
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { StartedService } from '../../../src/service/http/app.js';
import { start } from './fixtures.js';

function get(svc: StartedService, path: string, headers: Record<string, string>): Promise<{ status: number; type: string; body: string }> {
  const url = new URL(svc.origin);
  return new Promise((resolve, reject) => {
    const req = request({ hostname: url.hostname, port: url.port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('OAuth discovery documents', () => {
  it('list every endpoint at the issuer whatever Host or X-Forwarded-* a client sends', async () => {
    const svc = await start();
    const spoofed = { host: 'attacker.example', 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'https', forwarded: 'host=attacker.example;proto=https' };
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const res = await get(svc, path, spoofed);
      expect(res.status, path).toBe(200);
      expect(res.body).not.toContain('attacker.example');
      const metadata = JSON.parse(res.body) as Record<string, unknown>;
      expect(metadata).toMatchObject({
        issuer: svc.origin,
        authorization_endpoint: `${svc.origin}/oauth/authorize`,
        token_endpoint: `${svc.origin}/oauth/token`,
        registration_endpoint: `${svc.origin}/oauth/register`,
        revocation_endpoint: `${svc.origin}/oauth/revoke`,
        jwks_uri: `${svc.origin}/oauth/jwks`,
      });
    }
    // Behind a proxy that ends TLS (`--public-url https://…`), the scheme is the issuer's too.
    svc.service.origin = 'https://clips.example.org';
    const behindProxy = JSON.parse((await get(svc, '/.well-known/oauth-authorization-server', { host: `127.0.0.1:${new URL(svc.url).port}` })).body) as Record<string, unknown>;
    expect(behindProxy).toMatchObject({ issuer: 'https://clips.example.org', token_endpoint: 'https://clips.example.org/oauth/token' });
  });

  it('serve the assistant endpoint’s resource at the path-inserted URL only; the bare one is a 404 problem', async () => {
    const svc = await start();
    const pathForm = await get(svc, '/.well-known/oauth-protected-resource/mcp', {});
    expect(pathForm.status).toBe(200);
    expect(JSON.parse(pathForm.body)).toMatchObject({ resource: `${svc.origin}/mcp` });
    const root = await get(svc, '/.well-known/oauth-protected-resource', {});
    expect(root.status).toBe(404);
    expect(root.type).toContain('application/problem+json');
    expect(JSON.parse(root.body)).toMatchObject({ code: 'not_found' });
    expect(root.body).toContain('/.well-known/oauth-protected-resource/mcp');
  });
});
