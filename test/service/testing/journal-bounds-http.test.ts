import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../helpers/service-client.js';

// Issue 29 items 1, 2, 5 and 9 over HTTP: what an attacker with an ordinary key did to the request journal.

const ADMIN = 'adm_journal_bounds_admin_token_0123';
const opened: Array<{ service: Service; client: ServiceClient }> = [];
afterEach(async () => {
  for (const { service, client } of opened.splice(0)) {
    await client.close();
    await service.close();
  }
});

async function open(options: Partial<Parameters<typeof Service.open>[0]> = {}) {
  const service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true, start: Date.parse('2026-03-01T12:00:00Z') }), adminToken: ADMIN, warn: () => undefined, ...options });
  const client = await serviceClient(service);
  opened.push({ service, client });
  return { service, client, apiKey: service.first().apiKey };
}

describe('the request journal under attack (issue 29)', () => {
  it('item 9: a rotated-away --webhook-secret of any shape, which can still sign, is redacted', async () => {
    const own = 'my own signing secret, not whsec shaped';
    const { service, client, apiKey } = await open({ webhookSecret: own });
    const keyId = service.accounts.first()!.key.id;
    const rotated = await client.post(`/settings/keys/${keyId}/rotate-secret`, undefined, { key: apiKey });
    expect(rotated.status).toBe(200);
    await client.post('/v1/videos', { prompt: `old ${own}; new ${rotated.body.webhook_secret as string}` }, { key: apiKey });
    const text = JSON.stringify((await client.get('/test_helpers/requests', { key: ADMIN })).body);
    expect(text).toContain('old [redacted]; new [redacted]');
    expect(text).not.toContain(rotated.body.webhook_secret);
    expect(text).not.toContain(own);
  });
});
