import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { Service } from '../../../src/service/service.js';
import { JOURNAL_CAP, MAX_BODY_CHARS, MAX_PATH_FILTER_SEGMENTS } from '../../../src/service/testing/journal.js';
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

/** A JSON body of about `chars` characters of prose, the same for every service. */
function largeBody(chars: number) {
  const words = 'a fox jumps over the lazy dog near the river bank at dawn ';
  return { prompt: 'a fox', notes: Array.from({ length: Math.ceil(chars / 1000) }, () => words.repeat(17)) };
}

describe('the request journal under attack (issue 29)', () => {
  it('item 1: a path template is matched by segment; 16 placeholders against a long path answer at once; an unbounded filter is refused', async () => {
    const { client, apiKey } = await open();
    const long = `/v1/videos/${'a'.repeat(2000)}`;
    expect((await client.get(long, { key: apiKey })).status).toBe(404);
    expect((await client.post('/v1/videos/7/retry', undefined, { key: apiKey })).status).toBe(404);
    const placeholders = Array.from({ length: 16 }, (_, i) => `{p${i}}`).join('');
    const started = performance.now();
    const hostile = await client.get(`/test_helpers/requests?path=/v1/videos/${placeholders}x`, { key: apiKey });
    const spread = await client.get(`/test_helpers/requests?path=${Array.from({ length: 16 }, (_, i) => `/{p${i}}`).join('')}`, { key: apiKey });
    // A guard against catastrophic backtracking only (before the fix this never answered).
    expect(performance.now() - started).toBeLessThan(1000);
    expect([hostile.status, hostile.body.data]).toEqual([200, []]);
    expect([spread.status, spread.body.data]).toEqual([200, []]);
    const template = await client.get('/test_helpers/requests?path=/v1/videos/{id}', { key: apiKey });
    expect(template.body.data.map((entry: { path: string }) => entry.path.length)).toEqual([1024]);
    const nested = await client.get('/test_helpers/requests?path=/v1/{a}/{b}/retry', { key: apiKey });
    expect(nested.body.data.map((entry: { path: string }) => entry.path)).toEqual(['/v1/videos/7/retry']);
    const tooMany = `/${Array.from({ length: MAX_PATH_FILTER_SEGMENTS + 1 }, () => '{s}').join('/')}`;
    expect(await client.get(`/test_helpers/requests?path=${tooMany}`, { key: apiKey })).toMatchObject({ status: 400, body: { code: 'invalid_parameter', parameter: 'path' } });
  });

  it('item 2: 5,000 keys made and revoked change nothing of what redacting a 900 KB body costs, and the kept body is bounded', async () => {
    // One service for both measures: a secret it drew at random (its media secret) may start with two
    // characters the prose has, which costs a few lookups more, the same in both. The 5,000 keys are
    // written out, so no random key of theirs can start so.
    const { service, client, apiKey } = await open();
    const account = service.accounts.first()!.account;
    const lookupsOf = async (keys: number) => {
      for (let i = 0; i < keys; i++) {
        const n = String(i).padStart(32, '0');
        service.accounts.revoke(service.accounts.addKey(account, { token: `sk_${n}`, webhookSecret: `whsec_${n}` }));
      }
      const before = service.journal.secrets.lookups;
      const sent = await client.post('/v1/videos', largeBody(900_000), { key: apiKey });
      expect(sent.status).toBe(202);
      const [entry] = (await client.get('/test_helpers/requests?limit=1', { key: apiKey })).body.data;
      return { lookups: service.journal.secrets.lookups - before, entry, held: service.journal.secrets.size };
    };
    const few = await lookupsOf(0);
    const many = await lookupsOf(5_000);
    expect(many.held).toBeGreaterThan(10_000);
    expect(many.lookups).toBe(few.lookups);
    // Only what is kept is scanned: a few lookups for each character kept, not for each of the 900,000 sent.
    expect(many.lookups).toBeLessThan(4 * MAX_BODY_CHARS);
    expect(many.entry).toMatchObject({ truncated: true });
    expect(many.entry.body).toHaveLength(MAX_BODY_CHARS);
    expect(many.entry.body.startsWith('{"prompt":"a fox","notes":["a fox jumps')).toBe(true);
  });

  it(`item 5: ${JOURNAL_CAP} requests without a key evict no account's history`, async () => {
    const { service, client, apiKey } = await open();
    const other = (await client.post('/test_helpers/accounts', { name: 'b' }, { key: ADMIN })).body as { id: number; api_key: string };
    await client.post('/v1/videos', { prompt: 'a fox' }, { key: apiKey });
    await client.get('/v1/videos/42', { key: other.api_key });
    for (let sent = 0; sent < JOURNAL_CAP + 10; sent += 101) await Promise.all(Array.from({ length: 101 }, () => client.get('/v1/pricing', { key: null })));
    expect((await client.get('/test_helpers/requests', { key: apiKey })).body.data).toEqual([expect.objectContaining({ operation: 'createVideo', status: 202 })]);
    expect((await client.get('/test_helpers/requests', { key: other.api_key })).body.data).toEqual([expect.objectContaining({ operation: 'getVideo', status: 404 })]);
    const keyless = (await client.get(`/test_helpers/requests?operation=getPricing&limit=${JOURNAL_CAP}`, { key: ADMIN })).body.data as unknown[];
    expect(keyless).toHaveLength(JOURNAL_CAP);
    // The key-less ring, the two accounts' entries and the admin's own request (its lane, follow-up item 4).
    expect(service.journal.size).toBeLessThanOrEqual(JOURNAL_CAP + 3);
  });

  it(`follow-up item 4: the admin token's own requests outlive ${JOURNAL_CAP} requests without a key`, async () => {
    const { client } = await open();
    expect((await client.post('/test_helpers/accounts', { name: 'made-by-admin' }, { key: ADMIN })).status).toBe(201);
    for (let sent = 0; sent < JOURNAL_CAP + 10; sent += 101) await Promise.all(Array.from({ length: 101 }, () => client.get('/v1/pricing', { key: null })));
    const made = (await client.get('/test_helpers/requests?operation=createTestAccount', { key: ADMIN })).body.data as unknown[];
    expect(made).toEqual([expect.objectContaining({ operation: 'createTestAccount', account: null, status: 201 })]);
  });

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
