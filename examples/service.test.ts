// A test file written the way a user of cliphook writes one (vitest): one simulated service for the
// whole file, an account of its own for each test, a fixture, a fault rule, a look at the request
// journal and a webhook that arrives twice. Run: npx vitest run examples/service.test.ts
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createReceiver, MemoryDeliveryStore } from 'cliphook';
import { startService, type StartedService } from 'cliphook/service';

let svc: StartedService;
/** This test's own account: nothing another test does can reach its balance, clips or journal. */
let key: string;
/** Its webhook signing secret, and its id. */
let secret: string;
let account: number;

const admin = () => ({ authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' });
const mine = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc.close();
});
beforeEach(async () => {
  // The test helpers are on the handle too (or over HTTP with svc.adminToken, as below).
  ({ id: account, api_key: key, webhook_secret: secret } = await svc.accounts.create({ balance: 500 }));
});

/** Your app's code under test: polls a clip until it has ended, retrying a 5xx after a second. */
async function waitForClip(id: number, headers: Record<string, string>): Promise<{ status: string; video_url: string | null }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await fetch(`${svc.url}/videos/${id}`, { headers });
    if (res.status >= 500) {
      await svc.clock.advance(1_000);
      continue;
    }
    const clip = (await res.json()) as { status: string; video_url: string | null };
    if (clip.status === 'done' || clip.status === 'error') return clip;
    await svc.clock.advance(5_000);
  }
  throw new Error(`clip ${id} never ended`);
}

describe('my integration against the simulated service', () => {
  it('downloads a finished clip from a fixture', async () => {
    const seeded = await fetch(`${svc.origin}/test_helpers/seed`, {
      method: 'POST',
      headers: admin(),
      body: JSON.stringify({ accounts: [{ name: 'shop' }], clips: [{ name: 'intro', account: 'shop', status: 'done', prompt: 'a fox' }] }),
    });
    expect(seeded.status).toBe(201);
    const { accounts, clips } = (await seeded.json()) as { accounts: Record<string, { api_key: string }>; clips: Record<string, number> };
    const clip = await waitForClip(clips.intro!, { authorization: `Bearer ${accounts.shop!.api_key}` });
    expect(clip.status).toBe('done');
    expect((await fetch(clip.video_url!)).status).toBe(200);
  });

  it('keeps polling through a 503 and sends no request twice', async () => {
    const created = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { ...mine(), 'idempotency-key': 'order-42' }, body: JSON.stringify({ prompt: 'a red fox' }) });
    const { id } = (await created.json()) as { id: number };
    // The first GET of this clip fails as the real service's busy upstream would.
    const rule = await fetch(`${svc.origin}/test_helpers/faults`, { method: 'POST', headers: mine(), body: JSON.stringify({ match: { operation: 'getVideo' }, times: 1, action: { problem: 'upstream_busy' } }) });
    expect(rule.status).toBe(201);

    expect((await waitForClip(id, mine())).status).toBe('done');

    // The journal says what the app sent: one POST, and the failed GET followed by others.
    const journal = await fetch(`${svc.origin}/test_helpers/requests`, { headers: mine() });
    const { data } = (await journal.json()) as { data: Array<{ operation: string; status: number; idempotency_key: string | null }> };
    const posts = data.filter((entry) => entry.operation === 'createVideo');
    expect(posts).toEqual([expect.objectContaining({ status: 202, idempotency_key: 'order-42' })]);
    const gets = data.filter((entry) => entry.operation === 'getVideo').reverse();
    expect(gets[0]).toMatchObject({ status: 503 });
    expect(gets.at(-1)).toMatchObject({ status: 200 });
  });

  it('handles a webhook once when it arrives twice, at once, cut or replayed late', async () => {
    // Your app's webhook endpoint: cliphook's receiver, on the service's simulated clock.
    const clock = () => svc.clock.nowOf(account); // this account's own simulated time
    const handled: number[] = [];
    const receiver = createReceiver({ secret, clock, store: new MemoryDeliveryStore({ clock }) });
    receiver.on('video.completed', (event) => void handled.push(event.id));
    const app = createServer(receiver.express()).listen(0, '127.0.0.1');
    await new Promise((resolve) => app.once('listening', resolve));
    const callback_url = `http://127.0.0.1:${(app.address() as AddressInfo).port}/webhooks`;

    // Every webhook of this account comes in every troublesome way at once.
    const chaos = await fetch(`${svc.origin}/test_helpers/webhook_chaos`, { method: 'POST', headers: mine(), body: JSON.stringify({ modes: ['webhook_duplicate', 'webhook_concurrent', 'webhook_cut', 'webhook_late'] }) });
    expect(chaos.status).toBe(200);
    const created = await fetch(`${svc.url}/videos`, { method: 'POST', headers: mine(), body: JSON.stringify({ prompt: 'a red fox', callback_url }) });
    const { id } = (await created.json()) as { id: number };
    await svc.clock.advance(10_000); // the clip ends; its webhook arrives (twice, at once, late), its answer is lost
    await svc.clock.advance(30_000); // the retry of the cut attempt
    expect(handled).toEqual([id]);
    await new Promise((resolve) => app.close(resolve));
  });
});
