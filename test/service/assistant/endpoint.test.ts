import { describe, expect, it } from 'vitest';
import type { StartedService } from '../../../src/service/http/app.js';
import { balance, call, connect, start, untilWaiting } from './fixtures.js';

describe('assistant endpoint (MCP, Streamable HTTP, stateless)', () => {
  it('negotiates 2026-07-28 and serves a 2025-11-25 client, with every tool listed', async () => {
    const started = await start();
    const modern = await connect(started, 'modern');
    expect(modern.getProtocolEra()).toBe('modern');
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const legacy = await connect(started, 'legacy');
    expect(legacy.getProtocolEra()).toBe('legacy');
    expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    for (const client of [modern, legacy]) {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(
        ['cancel_clip', 'create_clip', 'create_clip_from_effect', 'create_image', 'get_account', 'get_clip', 'get_image', 'get_photo', 'get_topup_link', 'list_clips', 'list_effects', 'list_photos', 'start_photo_upload'].sort(),
      );
      const create = tools.find((tool) => tool.name === 'create_clip')!;
      expect(create.inputSchema.required).toContain('max_credits');
      expect(create.outputSchema).toBeDefined();
    }
    const effects = await call(legacy, 'list_effects');
    expect((effects.data.effects as Array<{ id: string; credits: number }>).find((effect) => effect.id === 'product-spin')?.credits).toBe(20);
  });

  it('answers 401 with WWW-Authenticate without a valid key, GET as the stateless SDK does, and reports its status', async () => {
    const started = await start();
    const init = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' };
    const missing = await fetch(`${started.origin}/mcp`, init);
    expect(missing.status).toBe(401);
    // RFC 9728 section 5.1: the challenge points clients to the protected resource metadata.
    const metadata = `${started.origin}/.well-known/oauth-protected-resource/mcp`;
    expect(missing.headers.get('www-authenticate')).toBe(`Bearer realm="cliphook", resource_metadata="${metadata}", scope="mcp"`);
    const wrong = await fetch(`${started.origin}/mcp`, { ...init, headers: { ...init.headers, authorization: 'Bearer not-a-real-key-123' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe(`Bearer realm="cliphook", error="invalid_token", resource_metadata="${metadata}", scope="mcp"`);
    const get = await fetch(`${started.origin}/mcp`, { headers: { authorization: `Bearer ${started.apiKey}`, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    // Not counted against the 60 a minute (issue 20 item 12), so it carries no rate-limit headers.
    expect(get.headers.get('x-ratelimit-limit')).toBeNull();
    const status = await (await fetch(`${started.origin}/mcp/status`)).json();
    expect(status).toMatchObject({ enabled: true, url: `${started.origin}/mcp`, transport: 'streamable-http', stateless: true });
    expect(status.protocol_versions).toEqual(expect.arrayContaining(['2026-07-28', '2025-11-25']));
  });

  it('is off with assistant: false: /mcp is 404 problem+json and the status says disabled', async () => {
    const started = await start({ assistant: false });
    const res = await fetch(`${started.origin}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${started.apiKey}` }, body: '{}' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await (await fetch(`${started.origin}/mcp/status`)).json()).toMatchObject({ enabled: false, url: null });
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp', '/oauth/authorize', '/oauth/consent/x']) {
      expect((await fetch(`${started.origin}${path}`)).status).toBe(404);
    }
  });

  it('creates a clip at the base price, visible in GET /v1/videos; get_clip returns as soon as it ends', async () => {
    const started = await start();
    await topUpOnce(started);
    const client = await connect(started);
    const before = await balance(started);
    const created = await call(client, 'create_clip', { prompt: 'a red fox in snow', model: 'standard-hd', max_credits: 20 });
    expect(created.isError).toBe(false);
    expect(created.data).toMatchObject({ status: 'pending', credits_used: 20 });
    expect(await balance(started)).toBe(before - 20);
    const list = (await (await fetch(`${started.url}/videos`, { headers: { authorization: `Bearer ${started.apiKey}` } })).json()) as { data: Array<{ id: number }> };
    expect(list.data.map((video) => video.id)).toContain(created.data.id);
    let settled = false;
    const timers = started.clock.timers;
    const waiting = call(client, 'get_clip', { clip_id: created.data.id }).finally(() => {
      settled = true;
    });
    await untilWaiting(started, timers);
    expect(settled).toBe(false);
    await started.clock.advance(10_000);
    const got = await waiting;
    expect(got.data).toMatchObject({ id: created.data.id, status: 'done' });
    // 10 simulated seconds, far below the 45 s wait: woken by the clip's end.
  });

  it('refuses above max_credits and above the daily limit, nothing charged; allowed again after 24 simulated hours', async () => {
    const started = await start();
    const client = await connect(started);
    const start0 = await balance(started);
    const over = await call(client, 'create_clip', { prompt: 'a fox', model: 'standard', duration: 5, max_credits: 9 });
    expect(over).toMatchObject({ isError: true, error: { error: 'cost_exceeds_max', details: { cost: 10, max_credits: 9 } } });
    expect(await balance(started)).toBe(start0);
    // Not topped up yet: 10 credits a day. A 5 s standard clip is 10.
    expect((await call(client, 'create_clip', { prompt: 'fox one', max_credits: 10 })).isError).toBe(false);
    const refused = await call(client, 'create_clip', { prompt: 'fox two', max_credits: 10 });
    expect(refused).toMatchObject({ isError: true, error: { error: 'daily_limit_reached' } });
    expect(await balance(started)).toBe(start0 - 10);
    // Issue 22: the daily limit runs on the account's own time: another account's day changes nothing.
    const other = await started.accounts.create({});
    await started.clock.advance(24 * 3_600_000 + 1_000, { account: other.id });
    expect(await call(client, 'create_clip', { prompt: 'fox two', max_credits: 10 })).toMatchObject({ isError: true, error: { error: 'daily_limit_reached' } });
    await started.clock.advance(24 * 3_600_000 + 1_000, { account: 1 });
    expect((await call(client, 'create_clip', { prompt: 'fox two', max_credits: 10 })).isError).toBe(false);
    const account = await call(client, 'get_account');
    expect(account.data.assistant).toMatchObject({ daily_limit: 10, used_today: 10, remaining_today: 0 });
  });

  it('refuses a fourth running clip, and never charges a repeat twice', async () => {
    const started = await start();
    await topUpOnce(started);
    const client = await connect(started);
    const start0 = await balance(started);
    const first = await call(client, 'create_clip', { prompt: 'clip 1', duration: 4, max_credits: 8 });
    const again = await call(client, 'create_clip', { duration: 4, prompt: 'clip 1', max_credits: 8 });
    expect(again.data).toMatchObject({ id: first.data.id, replayed: true });
    const keyed = await call(client, 'create_clip', { prompt: 'clip 2', duration: 4, max_credits: 8, idempotency_key: 'k-1' });
    const keyedAgain = await call(client, 'create_clip', { prompt: 'clip 2 reworded', duration: 4, max_credits: 8, idempotency_key: 'k-1' });
    expect(keyedAgain.data.id).toBe(keyed.data.id);
    expect((await call(client, 'create_clip', { prompt: 'clip 3', duration: 4, max_credits: 8 })).isError).toBe(false);
    expect(await balance(started)).toBe(start0 - 24);
    const fourth = await call(client, 'create_clip', { prompt: 'clip 4', duration: 4, max_credits: 8 });
    expect(fourth).toMatchObject({ isError: true, error: { error: 'too_many_running_clips' } });
    expect(await balance(started)).toBe(start0 - 24);
    // cancel_clip refunds a pending clip, which gives its credits back to the daily limit.
    const cancelled = await call(client, 'cancel_clip', { clip_id: keyed.data.id });
    expect(cancelled.data).toMatchObject({ action: 'cancelled', credits_refunded: 8 });
    expect(await balance(started)).toBe(start0 - 16);
    // After 2 minutes the same arguments are a new clip.
    await started.clock.advance(2 * 60_000 + 1_000);
    const later = await call(client, 'create_clip', { prompt: 'clip 1', duration: 4, max_credits: 8 });
    expect(later.isError).toBe(false);
    expect(later.data.id).not.toBe(first.data.id);
  });
});

/** Tops the account up once, so its assistant's daily limit is 30. */
async function topUpOnce(started: StartedService): Promise<void> {
  const res = await fetch(`${started.origin}/settings/top-up`, { method: 'POST', headers: { authorization: `Bearer ${started.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ credits: 100 }) });
  expect(res.status).toBeLessThan(300);
}
