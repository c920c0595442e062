import { afterAll, describe, expect, it } from 'vitest';
import { createReceiver, RedisDeliveryStore } from '../../src/index.js';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import { completedEvent, signedRequest } from '../helpers/webhooks.js';

const redis = redisAvailable() ? await startRedis({ persist: true }) : null;
afterAll(() => redis?.stop());

const SECRET = 'whsec_redis_restart';

describe.runIf(redis)('RedisDeliveryStore when Redis restarts (issue 13)', () => {
  it('answers 503 store_unavailable while Redis is down, runs nothing, and remembers what it processed once Redis is back', async () => {
    const store = new RedisDeliveryStore({ url: redis!.url, prefix: `restart-${Date.now()}:` });
    const receiver = createReceiver({ secret: SECRET, store });
    const handled: string[] = [];
    const errors: string[] = [];
    receiver.onAny((_event, { deliveryId }) => void handled.push(deliveryId));
    receiver.onError((error) => void errors.push(error.code));
    const send = (deliveryId: string, id: number) => {
      const request = signedRequest(completedEvent({ id }), { secret: SECRET, deliveryId });
      return receiver.fetch(new Request('http://127.0.0.1/webhooks', { method: 'POST', headers: request.headers, body: request.body }));
    };
    try {
      expect((await send('dlv_before', 1)).status).toBe(200);

      await redis!.kill();
      const down = await send('dlv_during', 2);
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('5');
      expect(((await down.json()) as { code: string }).code).toBe('store_unavailable');
      expect(handled).toEqual(['dlv_before']);
      expect(errors).toEqual(['store_unavailable']); // no handler ran: the store failed

      await redis!.start();
      // The sender's retries: the delivery refused while Redis was down runs now, once; the one processed
      // before the restart is still known (Redis kept it in its append-only file).
      await expect.poll(async () => (await send('dlv_during', 2)).status, { timeout: 10_000 }).toBe(200);
      const again = await send('dlv_before', 1);
      expect(await again.json()).toEqual({ received: true, duplicate: true });
      expect(await (await send('dlv_during', 2)).json()).toEqual({ received: true, duplicate: true });
      expect(handled).toEqual(['dlv_before', 'dlv_during']);
    } finally {
      await receiver.close();
    }
  });
});
