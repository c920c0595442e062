// The spending rules where a review found them bypassable: a deleted clip still counts against the daily
// limit, an idempotency_key belongs to one tool, an assistant never picks up a key's default photos, and an
// image edited from a real person's photo stays an image.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it, onTestFinished } from 'vitest';
import { advanceWhile, balance, call, connect, start } from './fixtures.js';
import { within } from '../../helpers/within.js';

const keyed = (apiKey: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${apiKey}`, ...extra });

describe('assistant spending, edges', () => {
  it('a finished clip deleted through /v1 still counts against the daily limit (a deletion refunds nothing)', async () => {
    const started = await start();
    const client = await connect(started);
    const made = await call(client, 'create_clip', { prompt: 'a paper boat', duration: 5, max_credits: 10 });
    expect(made.isError).toBe(false);
    await started.clock.advance(120_000);
    const deleted = await fetch(`${started.url}/videos/${made.data.id}`, { method: 'DELETE', headers: keyed(started.apiKey) });
    expect(deleted.status).toBe(200);
    const account = await call(client, 'get_account');
    expect(account.data.assistant).toMatchObject({ daily_limit: 10, used_today: 10, remaining_today: 0 });
    expect((await call(client, 'create_clip', { prompt: 'another boat', duration: 5, max_credits: 10 })).error?.error).toBe('daily_limit_reached');
  });

  it('after a reset, a new clip that takes an old charged clip\'s id does not bring the old charge back (issue 31, s5a)', async () => {
    // The ledger's indexes were the assistant's own and no reset reached them: clip ids start again from 1,
    // and the new clip 1's first change re-saved the charge of the old clip 1 into the emptied table.
    const started = await start();
    const client = await connect(started);
    const made = await call(client, 'create_clip', { prompt: 'a paper boat', duration: 5, max_credits: 10 });
    expect(made.data.id).toBe(1);
    const spends = started.service.store.table('assistant_spend');
    expect(spends.size).toBe(1);
    await started.service.reset();
    expect(spends.size).toBe(0);
    const again = await fetch(`${started.url}/videos`, { method: 'POST', headers: keyed(started.apiKey, { 'content-type': 'application/json' }), body: JSON.stringify({ prompt: 'a fox', model: 'cinema-480p', duration: 5 }) });
    expect(again.status).toBe(202);
    expect(((await again.json()) as { id: number }).id).toBe(1);
    await started.clock.advance(120_000);
    expect((await (await fetch(`${started.url}/videos/1`, { headers: keyed(started.apiKey) })).json()).status).toBe('done');
    expect(spends.size).toBe(0);
  });

  it('an idempotency_key of create_clip is not replayed into create_image', async () => {
    const started = await start({ fetchImage: async () => ({ ok: true }) });
    const client = await connect(started);
    const clip = await call(client, 'create_clip', { prompt: 'a kite', duration: 4, max_credits: 8, idempotency_key: 'same' });
    expect(clip.isError).toBe(false);
    const image = await advanceWhile(started, call(client, 'create_image', { description: 'a lighthouse', max_credits: 2, idempotency_key: 'same' }), 5_000);
    expect(image.isError).toBe(false);
    expect(image.data).toMatchObject({ object: 'image_job', status: 'done' });
    expect(image.data.replayed).toBeUndefined();
    expect(started.service.store.table('image_job').size).toBe(1);
  });

  it('a prompt-only clip does not use the key\'s default assets, and an image with animate "no" is refused', async () => {
    const started = await start();
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#884422' } }).png().toBuffer();
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'me.png');
    const asset = await (await fetch(`${started.url}/assets`, { method: 'POST', headers: keyed(started.apiKey), body: form })).json();
    await started.clock.advance(120_000);
    const keyId = started.service.accounts.first()!.key.id;
    const set = await fetch(`${started.origin}/settings/keys/${keyId}/default-assets`, { method: 'PUT', headers: keyed(started.apiKey, { 'content-type': 'application/json' }), body: JSON.stringify({ asset_ids: [asset.id] }) });
    expect(set.status).toBe(200);
    const client = await connect(started);
    const clip = await call(client, 'create_clip', { prompt: 'a quiet street', duration: 4, max_credits: 8 });
    expect(clip.isError).toBe(false);
    expect(clip.data.asset_source ?? null).not.toBe('default_asset_ids');
    expect(clip.data.asset_ids_used ?? []).toEqual([]);

    // An edit of a real person's photo (consent "permission"): spec 2.7 animate "no", it stays an image.
    const edit = await fetch(`${started.url}/images`, {
      method: 'POST',
      headers: keyed(started.apiKey, { 'content-type': 'application/json' }),
      body: JSON.stringify({ description: 'make it a watercolour', asset_ids: [asset.id], subject_consent: 'permission' }),
    });
    expect(edit.status).toBe(202);
    const job = await edit.json();
    await started.clock.advance(60_000);
    const done = await (await fetch(`${started.url}/images/${job.id}`, { headers: keyed(started.apiKey) })).json();
    expect(done.images[0].animate).toBe('no');
    const refused = await call(client, 'create_clip', { image_ids: [done.images[0].id], prompt: 'she waves', max_credits: 10 });
    expect(refused.error?.error).toBe('image_not_animatable');
  });

  it('a clip cancelled (refunded) and then deleted gives its credits back to the daily limit', async () => {
    const started = await start();
    const client = await connect(started);
    const made = await call(client, 'create_clip', { prompt: 'a paper boat', duration: 5, max_credits: 10 });
    const url = `${started.url}/videos/${made.data.id}`;
    expect(((await (await fetch(url, { method: 'DELETE', headers: keyed(started.apiKey) })).json()) as { credits_refunded?: number }).credits_refunded).toBe(10);
    expect((await fetch(url, { method: 'DELETE', headers: keyed(started.apiKey) })).status).toBe(200);
    expect((await call(client, 'get_account')).data.assistant).toMatchObject({ used_today: 0, remaining_today: 10 });
  });

  it('a repeat that arrives while the first call is being saved gets the first call\'s real outcome, even a failure', async () => {
    // On a data file: a unit of work on a store in memory has nothing to write, so it never commits.
    const dir = mkdtempSync(join(tmpdir(), 'cliphook-spending-'));
    // Removed after the fixtures' afterEach has closed the service (which writes its data file).
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const started = await start({ file: join(dir, 'service.json') });
    const client = await connect(started);
    const store = started.service.store as unknown as { commit(): Promise<void> };
    const real = store.commit.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inCommit = new Promise<void>((resolve) => (entered = resolve));
    let failNext = true;
    store.commit = async () => {
      if (failNext && started.service.store.table('video').size > 0) {
        failNext = false;
        entered();
        await gate;
        throw new Error('disk full');
      }
      return real();
    };
    // The repeat is known to wait on the first once it has entered the spending rules (their first step
    // reads the clock; the in-flight lookup follows at once, in the same turn): no real-time sleep.
    const clock = started.service.clock;
    let entries = 0;
    let secondEntered!: () => void;
    const inSpend = new Promise<void>((resolve) => (secondEntered = resolve));
    clock.now = function now(this: typeof clock) {
      // Called by `spend` itself (the frame under this one), not by something `spend` awaits.
      const caller = (new Error().stack ?? '').split('\n')[2] ?? '';
      if (/^\s*at AssistantSpending\.spend /.test(caller) && ++entries === 2) secondEntered();
      return Object.getPrototypeOf(clock).now.call(clock);
    };
    onTestFinished(() => void delete (clock as { now?: unknown }).now);
    const args = { prompt: 'a paper boat', duration: 5, max_credits: 10, idempotency_key: 'k1' };
    const first = call(client, 'create_clip', args);
    await inCommit;
    const second = call(client, 'create_clip', args);
    // Bounded: should `spend` stop reading the clock first, this fails saying so rather than hanging.
    await within(inSpend, 10_000, 'the repeat to enter AssistantSpending.spend (its first clock read)');
    release();
    expect((await first).error?.error).toBe('upstream_busy');
    expect((await second).error?.error).toBe('upstream_busy');
    // Nothing was kept of it: the same call again makes the clip, once.
    const third = await call(client, 'create_clip', args);
    expect(third.isError).toBe(false);
    expect(started.service.state.videos.get(third.data.id as number)).toBeDefined();
    expect(await balance(started)).toBe(990);
    // The charge taken back left the ledger with its row (the table's indexes, nothing undone by hand): one charge counts.
    expect(started.service.store.table('assistant_spend').size).toBe(1);
    expect((await call(client, 'get_account')).data.assistant).toMatchObject({ used_today: 10 });
  });
});

describe('the ledger is swept on each assistant\'s own time (issue 22), and only its own', () => {
  it('another account\'s clock, days ahead, does not forget what this assistant spent today', async () => {
    const started = await start();
    const client = await connect(started);
    // Not topped up yet: 10 credits a day. A 5 s standard clip is 10.
    expect((await call(client, 'create_clip', { prompt: 'fox one', max_credits: 10 })).isError).toBe(false);
    const other = await started.accounts.create({});
    await started.clock.advance(3 * 24 * 3_600_000, { account: other.id });
    const otherClient = await connect(started, 'modern', other.api_key);
    expect((await call(otherClient, 'create_clip', { prompt: 'an owl', max_credits: 10 })).isError).toBe(false);
    expect(await call(client, 'create_clip', { prompt: 'fox two', max_credits: 10 })).toMatchObject({ isError: true, error: { error: 'daily_limit_reached' } });
    expect((await call(client, 'get_account')).data.assistant).toMatchObject({ used_today: 10, remaining_today: 0 });
  });
});
