import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../../src/service/contract/routes.js';
import { createServiceApp } from '../../../src/service/http/app.js';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient } from '../../helpers/service-client.js';

// Issue 21: the router is built from the contract. Every contract route is served, and every route served
// is in the contract or one of the routes below, each outside the OpenAPI document for a reason.
const OUTSIDE_THE_CONTRACT: Record<string, string> = {
  'GET /files/assets/{file}': "an asset's unguessable public_url (2.6): a link, not an API call",
  'GET /files/images/{file}': "an image's url and thumbnail_url (2.7): links",
  'GET /storage/{file}': "where media's 302 points with --media-redirect (4.18): a signed link",
  'GET /videos/{id}': "the clip page a webhook's video_url names (6.5): a web page",
  'GET /mcp/status': 'the assistant endpoint status page (5.7): not part of /v1',
  'GET /settings/top-up': 'the top-up web page get_topup_link gives (5.7); POST /settings/top-up is the API',
  'POST /settings/top-up/form': "the top-up page's form",
  'GET /assets-ui/{file}': "the web pages' own CSS and scripts",
  'GET /photos/upload/{token}': 'the photo upload page start_photo_upload gives (5.7)',
  'POST /photos/upload/{token}': "the photo upload page's form",
  'POST /mcp': 'the assistant endpoint (MCP Streamable HTTP): its own protocol, JSON-RPC',
  'GET /mcp': 'the assistant endpoint (MCP): its event stream',
  'DELETE /mcp': 'the assistant endpoint (MCP): ends a session',
  'GET /.well-known/oauth-protected-resource/mcp': "RFC 9728 metadata of /mcp, the assistant's sign-in",
  'GET /.well-known/oauth-protected-resource': 'RFC 9728 metadata at the root form',
  'GET /oauth/consent/{uid}': "the assistant sign-in's consent page",
  'POST /oauth/consent/{uid}': "the consent page's form",
};

describe('the router and the contract', () => {
  it('serve the same routes, both ways: every served route is in the contract or a documented page or link', async () => {
    const app = await createServiceApp({ file: false, warn: () => undefined });
    try {
      const contract = ROUTES.map((route) => `${route.method} ${route.path}`);
      const served = new Set(app.routes);
      expect(contract.filter((route) => !served.has(route)), 'contract routes that are not served').toEqual([]);
      const outside = app.routes.filter((route) => !contract.includes(route));
      expect(outside.sort(), 'served routes outside the contract').toEqual(Object.keys(OUTSIDE_THE_CONTRACT).sort());
      expect(new Set(app.routes).size, 'a route served twice').toBe(app.routes.length);
    } finally {
      await app.close();
    }
  });

  it('answers every contract route with its own handler: never the unknown-path 404 or the 405 of another method', async () => {
    const service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), rateLimitPerMinute: 1e9, warn: () => undefined });
    const client = await serviceClient(service);
    try {
      const unknown = await client.get('/v1/no-such-thing');
      expect(unknown).toMatchObject({ status: 404, body: { code: 'not_found' } });
      for (const route of ROUTES) {
        const path = route.path.replace(/\{[^}]+\}/g, '1');
        const answer = await client.call(route.method, path, route.method === 'GET' || route.method === 'DELETE' ? {} : { body: {} });
        expect(answer.status, `${route.method} ${path}`).not.toBe(405);
        // A served route's 404 names its resource; the router's own 404 says the path is unknown.
        if (answer.status === 404) expect(answer.body.detail, `${route.method} ${path}`).not.toBe(unknown.body.detail);
      }
    } finally {
      await client.close();
      await service.close();
    }
  });
});
