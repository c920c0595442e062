import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { isOAuthPath, OAUTH_PATHS, OAUTH_ROOTS } from '../../../../src/service/assistant/oauth/paths.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { createServiceApp, type ServiceApp } from '../../../../src/service/http/app.js';

// Issue 31 (the walk): the app asks `isOAuthPath` only of a target whose first segment is one of OAUTH_ROOTS
// and that has a second (http/app.ts), so every path of the authorization server must be such a path.
const apps: ServiceApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

describe('the OAuth paths (oauth/paths.ts)', () => {
  it('has every path of the authorization server under one of OAUTH_ROOTS, with a second segment', () => {
    const served = [...Object.values(OAUTH_PATHS), '/oauth/authorize/resume-1', '/oauth/register/client-1'].filter(isOAuthPath);
    expect(served.length).toBeGreaterThan(7);
    for (const path of served) {
      const second = path.indexOf('/', 1);
      expect([path, second > 0 && OAUTH_ROOTS.has(path.slice(1, second))]).toEqual([path, true]);
    }
    expect([...OAUTH_ROOTS].sort()).toEqual(['.well-known', 'oauth']);
  });

  it('hands the authorization server its paths (a query included) and nothing under another first segment', async () => {
    const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    apps.push(app);
    const metadata = await request(app).get('/.well-known/oauth-authorization-server?x=1');
    expect([metadata.status, metadata.body.token_endpoint]).toEqual([200, `${app.service.origin}${OAUTH_PATHS.token}`]);
    const jwks = await request(app).get(OAUTH_PATHS.jwks);
    expect([jwks.status, Array.isArray(jwks.body.keys)]).toEqual([200, true]);
    // The router's own answers: a one-segment path, and the OAuth names under another first segment.
    for (const path of ['/oauth', '/v1/oauth/token', '/mcp/.well-known/openid-configuration']) {
      const res = await request(app).get(path);
      expect([path, res.status, res.body.code]).toEqual([path, 404, 'not_found']);
    }
  });
});
