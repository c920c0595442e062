// The Web Crypto path must agree exactly with the Node path: same header for the same bytes and secret,
// each verifying what the other signed, and the same dedupe key for the same event.
import { describe, expect, it } from 'vitest';
import { createReceiver as createNodeReceiver, MemoryDeliveryStore, sign as signNode, verifySignature as verifyNode } from '../../src/index.js';
import { createReceiver as createWebReceiver, sign as signWeb, verifySignature as verifyWeb } from '../../src/web.js';
import { SECRET, failedEvent, signedRequest } from '../helpers/webhooks.js';

const bodies: [string, string | Uint8Array][] = [
  ['empty', ''],
  ['ASCII JSON', JSON.stringify(failedEvent())],
  ['UTF-8 text', '{"prompt":"renard roux ❄️ 雪 — ключ"}'],
  ['UTF-8 bytes', new TextEncoder().encode('{"prompt":"雪".repeat(3)}')],
  ['a view inside a larger buffer', new Uint8Array(new TextEncoder().encode('xx{"id":1}yy').buffer, 2, 8)],
  ['large', 'a'.repeat(70_000)],
];
const secrets = ['whsec_test_secret', 'k'.repeat(200), 'ключ-🔑'];

describe('Web Crypto signatures agree with node:crypto', () => {
  it.each(bodies)('sign gives the same header for a %s body under every secret', async (_name, body) => {
    for (const secret of secrets) expect(await signWeb(body, secret)).toBe(signNode(body, secret));
  });

  it.each(bodies)('each verifies what the other signed (%s), with rotated secrets [new, old]', async (_name, body) => {
    const byOld = signNode(body, 'whsec_old');
    expect(await verifyWeb(body, byOld, ['whsec_new', 'whsec_old'])).toBe(true);
    expect(await verifyWeb(body, await signWeb(body, 'whsec_new'), ['whsec_new', 'whsec_old'])).toBe(true);
    expect(verifyNode(body, await signWeb(body, 'whsec_old'), ['whsec_new', 'whsec_old'])).toBe(true);
    expect(await verifyWeb(body, signNode(body, 'whsec_older'), ['whsec_new', 'whsec_old'])).toBe(false);
    expect(await verifyWeb(body, byOld.toUpperCase().replace('SHA256=', 'sha256='), 'whsec_old')).toBe(true);
  });

  it('answers false for malformed headers and refuses empty secrets and parsed bodies, like the Node path', async () => {
    for (const header of [undefined, '', 'sha256=abc', `sha256=${'z'.repeat(64)}`, ['a', 'b']]) expect(await verifyWeb('x', header, SECRET)).toBe(false);
    await expect(verifyWeb('x', 'sha256=00', '')).rejects.toThrow(/`secrets`/);
    await expect(verifyWeb('x', 'sha256=00', [])).rejects.toThrow(/`secrets`/);
    await expect(signWeb('x', '')).rejects.toThrow(/`secret`/);
    await expect(signWeb({ event: 'x' } as unknown as string, SECRET)).rejects.toThrow(/raw request body/);
  });

  it('the Node and the web receiver key an event alike: sharing a store, each sees the other\'s event as a duplicate', async () => {
    const store = new MemoryDeliveryStore();
    const node = createNodeReceiver({ secret: SECRET, store });
    const web = createWebReceiver({ secret: SECRET, store });
    const event = failedEvent({ prompt: 'un phare dans la tempête ⛈️' });
    const req = signedRequest(event, { deliveryId: 'dlv_node' });
    expect((await node.receive(Buffer.from(req.body), req.headers)).body).toBe('{"received":true}');
    // The same signed bytes under another delivery id, on the web receiver: caught by the event key alone.
    const replay = await web.fetch(new Request('http://127.0.0.1/', { method: 'POST', headers: { ...req.headers, 'x-service-delivery': 'dlv_web' }, body: req.body }));
    expect(await replay.json()).toEqual({ received: true, duplicate: true });
    // Another clip's event (issue 30: the key is the event and the clip id).
    const other = signedRequest({ ...event, id: event.id + 1 }, { deliveryId: 'dlv_web_2' });
    const viaWeb = await web.fetch(new Request('http://127.0.0.1/', { method: 'POST', headers: other.headers, body: other.body }));
    expect(await viaWeb.json()).toEqual({ received: true });
    const back = await node.receive(Buffer.from(other.body), { ...other.headers, 'x-service-delivery': 'dlv_node_2' });
    expect(JSON.parse(back.body)).toEqual({ received: true, duplicate: true });
  });
});
