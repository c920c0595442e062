// Issue 31 item 1: a tool does not catch; the tool chain's answer step turns what it throws into its refusal,
// once: a ServiceError as its code (as before), a failed write as 503 upstream_busy with retry_after, told to
// the service's warn (the tools' own wrappers used to drop that warning), anything else 500, reported.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { StartedService } from '../../../src/service/http/app.js';
import { balance, call, connect, start } from './fixtures.js';

const NOT_SAVED = /a change was not saved/;

/** A service on a data file whose writes fail while `failing` is set (`commit` is what a unit of work awaits). */
async function onFailingDisk(): Promise<{ svc: StartedService; warnings: string[]; disk: { failing: boolean } }> {
  const dir = mkdtempSync(join(tmpdir(), 'cliphook-tool-refusals-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const warnings: string[] = [];
  const svc = await start({ file: join(dir, 'service.json'), warn: (message) => warnings.push(message) });
  const store = svc.service.store as unknown as { commit(): Promise<void> };
  const real = store.commit.bind(store);
  const disk = { failing: false };
  store.commit = async () => {
    if (disk.failing) throw new Error('disk full');
    return real();
  };
  return { svc, warnings, disk };
}

describe('a tool\'s failed write: warned once, 503 upstream_busy with retry_after (issue 31 item 1)', () => {
  it('cancel_clip: nothing is cancelled or refunded, the warning is told once, the journal keeps the code', async () => {
    const { svc, warnings, disk } = await onFailingDisk();
    const client = await connect(svc);
    const made = await call(client, 'create_clip', { prompt: 'a paper boat', duration: 5, max_credits: 10 });
    expect(made.isError).toBe(false);
    const before = await balance(svc);
    disk.failing = true;
    const refused = await call(client, 'cancel_clip', { clip_id: made.data.id });
    disk.failing = false;
    expect(refused.isError).toBe(true);
    expect(refused.error).toEqual({ error: 'upstream_busy', message: 'The change could not be saved, so nothing was changed or charged. Retry shortly.', retry_after: 5 });
    expect(warnings.filter((message) => NOT_SAVED.test(message))).toHaveLength(1);
    expect(svc.service.state.videos.get(made.data.id as number)?.status).toBe('pending');
    expect(await balance(svc)).toBe(before);
    const { data } = await svc.requests.list({ operation: 'cancel_clip' });
    expect(data.map((entry) => [entry.status, entry.code])).toEqual([[200, 'upstream_busy']]);
    // The retry applies it once.
    expect((await call(client, 'cancel_clip', { clip_id: made.data.id })).data).toMatchObject({ action: 'cancelled', credits_refunded: 10 });
  });

  it('start_photo_upload: no link is kept, the warning is told once', async () => {
    const { svc, warnings, disk } = await onFailingDisk();
    const client = await connect(svc);
    disk.failing = true;
    const refused = await call(client, 'start_photo_upload');
    disk.failing = false;
    expect(refused.error).toMatchObject({ error: 'upstream_busy', retry_after: 5 });
    expect(warnings.filter((message) => NOT_SAVED.test(message))).toHaveLength(1);
    expect(svc.service.store.table('photo_upload').size).toBe(0);
  });

  it('create_clip: the spending rules\' own unit warns once too (not twice), and the refusal is not remembered', async () => {
    const { svc, warnings, disk } = await onFailingDisk();
    const client = await connect(svc);
    const args = { prompt: 'a paper boat', duration: 5, max_credits: 10, idempotency_key: 'boat-1' };
    disk.failing = true;
    const refused = await call(client, 'create_clip', args);
    disk.failing = false;
    expect(refused.error).toMatchObject({ error: 'upstream_busy', retry_after: 5 });
    expect(warnings.filter((message) => NOT_SAVED.test(message))).toHaveLength(1);
    expect(svc.service.store.table('video').size).toBe(0);
    const again = await call(client, 'create_clip', args);
    expect(again.isError).toBe(false);
    expect(again.data.replayed).toBeUndefined();
    const { data } = await svc.requests.list({ operation: 'create_clip' });
    expect(data.map((entry) => entry.code)).toEqual([null, 'upstream_busy']);
  });
});

describe('a refusal a tool throws reads as the one it returned (issue 31 item 1)', () => {
  it('a command\'s ServiceError: its code and sentence, isError, no retry_after, the journal\'s code', async () => {
    const svc = await start();
    const client = await connect(svc);
    const missing = await call(client, 'get_clip', { clip_id: 999, wait_seconds: 0 });
    expect(missing.isError).toBe(true);
    expect(missing.error).toEqual({ error: 'not_found', message: expect.stringContaining('999') });
    const bad = await call(client, 'list_clips', { limit: 0 });
    expect(bad.error?.error).toBe('invalid_parameter');
    const { data } = await svc.requests.list({});
    expect(data.filter((entry) => entry.path === '/mcp' && entry.operation !== null && entry.code !== null).map((entry) => [entry.operation, entry.code])).toEqual([
      ['list_clips', 'invalid_parameter'],
      ['get_clip', 'not_found'],
    ]);
  });

  it('an unexpected error: 500 internal_error without its message, reported once', async () => {
    const errors: string[] = [];
    const svc = await start({ warn: (message) => errors.push(message) });
    const client = await connect(svc);
    svc.service.videos.list = () => {
      throw new Error('the index is broken');
    };
    const failed = await call(client, 'list_clips');
    expect(failed.error).toEqual({ error: 'internal_error', message: 'Something went wrong on our side.' });
    expect(errors.filter((message) => message.includes('the index is broken'))).toHaveLength(1);
  });
});

describe('a refusal\'s user_action, as on /v1 (spec 7)', () => {
  it('carries the top-up page for insufficient_credits, and the kind alone where /v1 has no link', async () => {
    const svc = await start();
    const poor = await svc.accounts.create({ balance: 12 });
    // A top-up lifts the assistant's default daily limit to 30 (spec 5.7), so the balance (13) is what refuses.
    const topUp = await fetch(`${svc.origin}/settings/top-up`, { method: 'POST', headers: { authorization: `Bearer ${poor.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify({ credits: 1 }) });
    expect(topUp.status).toBe(200);
    const client = await connect(svc, 'modern', poor.api_key);
    const refused = await call(client, 'create_clip', { prompt: 'a paper boat', duration: 10, max_credits: 20 });
    expect(refused.error).toMatchObject({ error: 'insufficient_credits', user_action: { kind: 'top_up', url: `${svc.origin}/settings/top-up` }, details: { required: 20, balance: 13 } });
    const capped = await call(client, 'create_clip', { prompt: 'a paper boat', duration: 10, max_credits: 5 });
    expect(capped.error).toMatchObject({ error: 'cost_exceeds_max', user_action: { kind: 'raise_budget', url: null } });
    // The assistant's own codes have none.
    const unknown = await call(client, 'create_clip_from_effect', { effect_id: 'nope', max_credits: 50 });
    expect(unknown.error).toMatchObject({ error: 'unknown_effect' });
    expect(unknown.error).not.toHaveProperty('user_action');
  });
});
