// The contract is declared once (issue 21): the router is built from contract/routes.ts, and the only routes
// it serves beside the contract's are the extras listed here, each with why it is outside the contract. A
// route added to the router without a contract entry (or a reason here) fails this test, and so does a
// contract route that is not served.
import { afterEach, describe, expect, it } from 'vitest';
import { isOAuthPath } from '../../../src/service/assistant/oauth/paths.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { ROUTES, type RouteSpec } from '../../../src/service/contract/routes.js';
import { createServiceApp, type ServiceApp } from '../../../src/service/http/app.js';
import { Service } from '../../../src/service/service.js';
import { callerOf, serviceClient } from '../../helpers/service-client.js';

/** The routes outside the contract, always served: pages and links a browser or a link's holder opens, not the JSON API. */
const EXTRAS: Readonly<Record<string, string>> = {
  'GET /files/assets/{file}': "an asset's unguessable file link (spec 2.6): the link is the credential, and the answer is the file",
  'GET /files/images/{file}': "an image job's unguessable file link (spec 2.7): the link is the credential, and the answer is the file",
  'GET /storage/{file}': 'where a media 302 points (spec 4.18, serve --media-redirect): a short-lived storage URL, not an API endpoint',
  'GET /videos/{id}': "the clip page a webhook's video_url names (spec 6.5): the web UI's page, for a signed-in browser only",
  'GET /mcp/status': 'whether the assistant endpoint is on, and where (spec 5.7): the assistant side, served even when it is off',
  'GET /settings/top-up': "the top-up page a 402's user_action.url sends a person to: HTML",
  'POST /settings/top-up/form': "the top-up page's form post: a browser's form, checked by origin, not a key",
  'GET /assets-ui/{file}': "the service pages' CSS and scripts (issue 15)",
  'GET /photos/upload/{token}': "the assistant's photo upload page: the link's token is the credential, HTML",
  'POST /photos/upload/{token}': "the photo upload page's form post",
};

/** The routes of the assistant endpoint (MCP) and its OAuth sign-in, served unless `assistant: false` (serve --no-assistant). */
const ASSISTANT_EXTRAS: Readonly<Record<string, string>> = {
  'POST /mcp': 'the assistant endpoint: MCP streamable HTTP (JSON-RPC), its own protocol and its own tools',
  'GET /mcp': 'the assistant endpoint: MCP streamable HTTP (its GET stream)',
  'DELETE /mcp': 'the assistant endpoint: MCP streamable HTTP (session end)',
  'GET /.well-known/oauth-protected-resource/mcp': "RFC 9728 metadata of /mcp, how an assistant discovers the sign-in",
  'GET /.well-known/oauth-protected-resource': 'the bare RFC 9728 form, answered 404 on purpose: the origin is no protected resource (issue 20 item 5)',
  'GET /oauth/consent/{uid}': "the OAuth sign-in's consent page, where the account holder approves an assistant (HTML)",
  'POST /oauth/consent/{uid}': "the consent page's form post",
};
// The authorization server's own endpoints (/oauth/authorize, /oauth/token, /oauth/register, /oauth/revoke,
// /oauth/jwks, /.well-known/oauth-authorization-server, /.well-known/openid-configuration) are answered by
// oidc-provider before the router (http/app.ts, isOAuthPath): they are not router routes, and no router route
// may be one of their paths (checked below), or it would never be reached.

const contract = (ROUTES as readonly RouteSpec[]).map((route) => `${route.method} ${route.path}`);

const apps: ServiceApp[] = [];
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const app of apps.splice(0)) await app.close();
});

async function appWith(assistant: boolean): Promise<ServiceApp> {
  const app = await createServiceApp({ file: false, clock: new SimulatedClock({ frozen: true }), assistant, warn: () => undefined });
  apps.push(app);
  return app;
}

describe('the router and the contract (issue 21)', () => {
  it('declares each route of the contract once, by method and path and by operationId', () => {
    expect(new Set(contract).size).toBe(contract.length);
    const ids = ROUTES.map((route) => route.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('serves every contract route, and beside them exactly the documented extras', async () => {
    const app = await appWith(true);
    const served = [...app.routes];
    expect(new Set(served).size, 'a route served twice').toBe(served.length);
    const missing = contract.filter((route) => !served.includes(route));
    expect(missing, 'contract routes the router does not serve').toEqual([]);
    const outside = served.filter((route) => !contract.includes(route));
    expect(outside.sort(), 'routes served outside the contract').toEqual(Object.keys({ ...EXTRAS, ...ASSISTANT_EXTRAS }).sort());
    for (const [route, reason] of Object.entries({ ...EXTRAS, ...ASSISTANT_EXTRAS })) {
      expect(contract, `${route} is listed as an extra but is in the contract`).not.toContain(route);
      expect(reason.length, route).toBeGreaterThan(0);
    }
  });

  it('with the assistant endpoint off, serves the contract and the extras without the assistant ones', async () => {
    const app = await appWith(false);
    const served = [...app.routes];
    expect(served.filter((route) => !contract.includes(route)).sort()).toEqual(Object.keys(EXTRAS).sort());
    expect(contract.filter((route) => !served.includes(route))).toEqual([]);
  });

  it('has no router route that the OAuth server, answering first, would hide', async () => {
    const app = await appWith(true);
    const hidden = app.routes.filter((route) => isOAuthPath(route.slice(route.indexOf(' ') + 1)));
    expect(hidden).toEqual([]);
  });
});

describe('every contract route answers through the real app', () => {
  /** A value for each path parameter: a clip, image or asset id, the caller's key, an assistant id, a media file. */
  function pathOf(route: RouteSpec, keyId: string): string {
    return route.path.replace(/\{([a-z_]+)\}/gi, (_, name: string) => {
      if (name === 'file') return '1.mp4';
      if (route.path.startsWith('/settings/keys/')) return keyId;
      if (route.path.startsWith('/settings/assistants/')) return 'asst_unknown';
      return '1';
    });
  }

  it('answers each with neither the router\'s 404 for an unknown path nor 405, with a valid key', async () => {
    const service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), warn: () => undefined });
    cleanups.push(() => service.close());
    const client = await serviceClient(service);
    cleanups.push(() => client.close());
    const keyId = callerOf(service).key.id;
    // Revoking the caller's own key would answer every later request 401: revoke a second key instead.
    const spare = await client.post('/settings/keys');
    expect(spare.status).toBe(201);
    // How the router answers what it does not serve (dispatch.ts), so the checks below tell it from a route's own 404.
    expect(await client.get('/v1/no-such-route')).toMatchObject({ status: 404, body: { code: 'not_found', detail: 'Nothing at /v1/no-such-route.' } });
    expect(await client.call('PATCH', '/v1/videos')).toMatchObject({ status: 405, body: { code: 'method_not_allowed' } });
    const answered: string[] = [];
    for (const route of ROUTES as readonly RouteSpec[]) {
      const id = route.operationId === 'revokeKey' ? (spare.body.id as string) : keyId;
      const path = pathOf(route, id);
      const sendsBody = route.body !== undefined || route.idempotent === true || route.multipart !== undefined;
      const res = await client.call(route.method, path, sendsBody ? { body: {} } : {});
      const name = `${route.method} ${path} (${route.operationId}) answered ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`;
      // dispatch.ts: a path no route matches is 404 not_found "Nothing at <path>."; a known path with another method is 405.
      expect(res.status, name).not.toBe(405);
      expect(res.status === 404 && res.body?.code === 'not_found' && res.body?.detail === `Nothing at ${path}.`, name).toBe(false);
      // A route's own 404 (no such clip) is a problem of the route, still answered by it.
      expect(res.status, name).toBeLessThan(500);
      answered.push(`${route.method} ${route.path}`);
    }
    expect(answered).toEqual(contract);
  });
});
