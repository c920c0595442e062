import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service } from '../../../../src/service/service.js';
import { serviceClient, type ServiceClient } from '../../../helpers/service-client.js';

let service: Service;
let client: ServiceClient;

beforeAll(async () => {
  const emitter = { send: async () => undefined, stop: async () => undefined } as unknown as WebhookEmitter;
  // Every run is a few requests on a frozen clock: the per-minute limit is raised out of the way.
  service = await Service.open({ file: false, clock: new SimulatedClock({ frozen: true }), emitter, balance: 10_000_000, rateLimitPerMinute: 1_000_000, fetchImage: async () => ({ ok: true }) });
  client = await serviceClient(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});

const tasks = async () => ((await client.get('/videos?limit=1')).body as { total: number }).total;

const FIELDS = ['prompt', 'duration', 'ratio', 'aspect_ratio', 'model', 'resolution', 'image_urls', 'image_url', 'subject_consent', 'asset_ids', 'callback_url'];
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom('standard', 'cinema-hd', 'standard-720p', '16:9', '21:9', '720p', 'self', 'third_party_with_permission', 'https://example.com/a.jpg', 'http://127.0.0.1/h', 'asset://1', 5, 15, 30, 4, 3.5, -1, null),
  fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.constant('https://example.com/a.jpg')), { maxLength: 7 }),
);
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 8 }),
);
const key = fc.option(fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('same', 'x'.repeat(256), 'a b', 'é')), { nil: undefined });

describe('POST /videos under any input (property)', () => {
  it('never answers 5xx, and charges exactly when it creates a task', async () => {
    await fc.assert(
      fc.asyncProperty(body, key, fc.boolean(), async (input, idempotencyKey, batch) => {
        const before = service.first().balance;
        const tasksBefore = await tasks();
        const payload = batch ? { items: [input] } : input;
        // Sent as JSON whatever it is (a bare string or number too), the key as the Idempotency-Key header.
        const result = await client.post(batch ? '/videos/batch' : '/videos', JSON.stringify(payload), {
          headers: { 'content-type': 'application/json', ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }) },
        });
        expect(result.status).toBeLessThan(500);
        const created = (await tasks()) - tasksBefore;
        const replayed = result.headers['idempotent-replayed'] === 'true';
        if (result.status === 202 || result.status === 207) {
          expect(created).toBe(replayed ? 0 : 1);
          if (!replayed) expect(before - service.first().balance).toBe((result.body as { credits_used?: number; total_credits_used?: number }).credits_used ?? (result.body as { total_credits_used: number }).total_credits_used);
        } else {
          expect(created).toBe(0);
          expect(service.first().balance).toBe(before);
          expect(result.body).toMatchObject({ type: expect.any(String), title: expect.any(String), status: result.status, code: expect.any(String), trace_id: expect.any(String) });
        }
      }),
      { numRuns: 400 },
    );
  });
});
