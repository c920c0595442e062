import { describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../src/emitter/index.js';
import type { StartedService } from '../../../src/service/http/app.js';
import { advanceWhile, balance, call, connect, start } from './fixtures.js';

/** An emitter that records what the service hands it. */
function fakeEmitter() {
  const sent: Array<{ url: string; event: string; payload: { id?: number; status?: string } }> = [];
  const emitter = { send: async (input: (typeof sent)[number]) => void sent.push(input), stop: async () => undefined } as unknown as WebhookEmitter;
  return { emitter, sent };
}


describe('assistant tools', () => {
  it('create_image waits for its images; create_clip uses them by id and the clip sends its webhook', async () => {
    const { emitter, sent } = fakeEmitter();
    const started = await start({ emitter, fetchImage: async () => ({ ok: true }) });
    await topUpOnce(started);
    const client = await connect(started);
    const refused = await call(client, 'create_image', { description: 'a lighthouse at dusk', quality: 'hd', max_credits: 3 });
    expect(refused).toMatchObject({ isError: true, error: { error: 'cost_exceeds_max', details: { cost: 4, max_credits: 3 } } });
    const image = await advanceWhile(started, call(client, 'create_image', { description: 'a lighthouse at dusk', max_credits: 2 }), 5_000);
    expect(image.data).toMatchObject({ status: 'done', credits_charged: 2 });
    const imageId = (image.data.images as Array<{ id: number }>)[0]!.id;
    // An image is found among the caller's own jobs: no call reads every account's jobs (its cost would grow with them).
    const jobs = started.service.store.table('image_job');
    jobs.values = () => {
      throw new Error('create_clip read every image job');
    };
    const clip = await call(client, 'create_clip', { image_ids: [imageId], prompt: 'waves', callback_url: 'http://127.0.0.1:9/hooks', max_credits: 10 });
    expect(clip.isError).toBe(false);
    expect(clip.data).toMatchObject({ credits_used: 10, subject_consent: 'no_real_person' });
    expect((clip.data.image_urls as string[])[0]).toMatch(/\/files\/images\//);
    const unknown = await call(client, 'create_clip', { image_ids: [999], max_credits: 10 });
    expect(unknown).toMatchObject({ isError: true, error: { error: 'invalid_image_id' } });
    await started.clock.advance(10_000);
    expect(sent.map((hook) => [hook.url, hook.payload.id])).toEqual([['http://127.0.0.1:9/hooks', clip.data.id]]);
    const account = await call(client, 'get_account');
    expect(account.data.assistant).toMatchObject({ daily_limit: 30, used_today: 12, remaining_today: 18, running_clips: 0 });
  });

  it('create_clip reads only the image job that holds the image it names, however many jobs its account has', async () => {
    const started = await start({ fetchImage: async () => ({ ok: true }) });
    await topUpOnce(started);
    const client = await connect(started);
    const image = await advanceWhile(started, call(client, 'create_image', { description: 'a lighthouse at dusk', max_credits: 2 }), 5_000);
    const imageId = (image.data.images as Array<{ id: number }>)[0]!.id;
    const jobs = started.service.store.table('image_job');
    const made = jobs.get(image.data.id as number)!;
    // 200 later jobs of the same account, each counting the reads of its images (the made job too).
    const read = new Set<number>();
    const counted = (job: typeof made) => {
      const images = job.images;
      return Object.defineProperty({ ...job }, 'images', { enumerable: true, get: () => (read.add(job.id), images) });
    };
    await started.service.store.unit(() => {
      jobs.put(counted(made));
      for (let i = 1; i <= 200; i++) {
        const id = started.service.store.nextId('image_job');
        jobs.put(counted({ ...made, id, images: made.images.map((item) => ({ ...item, id: 1_000_000 + i, token: `other-${i}`, thumbToken: `other-thumb-${i}` })) }));
      }
    });
    read.clear();
    const clip = await call(client, 'create_clip', { image_ids: [imageId], prompt: 'waves', max_credits: 10 });
    expect(clip.isError).toBe(false);
    expect([...read]).toEqual([made.id]);
    read.clear();
    expect(await call(client, 'create_clip', { image_ids: [999], max_credits: 10 })).toMatchObject({ isError: true, error: { error: 'invalid_image_id' } });
    expect([...read]).toEqual([]);
  });

  it('create_clip_from_effect charges the effect\'s base price; unknown effects are refused', async () => {
    const started = await start();
    await topUpOnce(started);
    const client = await connect(started, 'legacy');
    const clip = await call(client, 'create_clip_from_effect', { effect_id: 'claymation', subject: 'a cat', max_credits: 15 });
    expect(clip.data).toMatchObject({ model: 'cinema', duration: 5, credits_used: 15, prompt: 'a cat as stop-motion claymation, handmade textures, 12 fps feel' });
    expect(await call(client, 'create_clip_from_effect', { effect_id: 'nope', max_credits: 15 })).toMatchObject({ isError: true, error: { error: 'unknown_effect' } });
    const listed = await call(client, 'list_clips', { status: 'pending' });
    expect(listed.data).toMatchObject({ total: 1 });
  });

  it('get_clip gives up after its wait on the simulated clock when the clip is still running', async () => {
    const started = await start();
    const client = await connect(started);
    const clip = await call(client, 'create_clip', { prompt: 'slow', max_credits: 10 });
    // A clip renders for at least 2.5 s at fast speed: after a 1 s wait it is still running.
    const got = await advanceWhile(started, call(client, 'get_clip', { clip_id: clip.data.id, wait_seconds: 1 }), 1_000);
    expect(['pending', 'generating']).toContain(got.data.status);
    expect(await call(client, 'cancel_clip', { clip_id: 12345 })).toMatchObject({ isError: true, error: { error: 'not_found' } });
  });

  it('cancel_clip refuses a clip already rendering, and one that has ended; get_image waits for its job', async () => {
    const started = await start({ fetchImage: async () => ({ ok: true }) });
    const client = await connect(started);
    const clip = await call(client, 'create_clip', { prompt: 'a windmill', duration: 4, max_credits: 8 });
    // Past its start, a clip renders: too late to cancel (spec 4.5), it will finish and be charged.
    const video = started.service.state.videos.get(clip.data.id as number)!;
    await started.clock.advance(video.plan.startAt - started.clock.now() + 1);
    expect(started.service.state.videos.get(video.id)!.status).toBe('generating');
    expect((await call(client, 'cancel_clip', { clip_id: video.id })).error?.error).toBe('already_rendering');
    await started.clock.advance(video.plan.endAt - started.clock.now() + 1);
    expect((await call(client, 'cancel_clip', { clip_id: video.id })).error?.error).toBe('already_ended');

    const made = await fetch(`${started.url}/images`, { method: 'POST', headers: { authorization: `Bearer ${started.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ description: 'a kettle' }) });
    const job = (await made.json()) as { id: number; status: string };
    expect(job.status).toBe('generating');
    const got = await advanceWhile(started, call(client, 'get_image', { image_job_id: job.id }), 5_000);
    expect(got.data).toMatchObject({ id: job.id, status: 'done' });
  });

  it('refuses an idempotency_key that is not 1-255 printable ASCII characters, as /v1 does', async () => {
    const started = await start();
    const client = await connect(started);
    for (const tool of ['create_clip', 'create_image']) {
      for (const key of ['', 'naïve-key', 'tab\tkey', 'x'.repeat(256)]) {
        const args = tool === 'create_clip' ? { prompt: 'a kite', duration: 4, max_credits: 8 } : { description: 'a kite', max_credits: 2 };
        const refused = (await client.callTool({ name: tool, arguments: { ...args, idempotency_key: key } })) as { isError?: boolean; content: Array<{ text?: string }> };
        expect(refused.isError).toBe(true);
        expect(refused.content[0]?.text).toContain('printable ASCII');
      }
    }
    expect(await balance(started)).toBe(1000);
  });

  it('counts /mcp against the same per-key rate limit as /v1', async () => {
    const started = await start({ rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await fetch(`${started.url}/account`, { headers: { authorization: `Bearer ${started.apiKey}` } })).status).toBe(200);
    const res = await fetch(`${started.origin}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${started.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).not.toBeNull();
  });
});

/** Tops the account up once, so its assistant's daily limit is 30. */
async function topUpOnce(started: StartedService): Promise<void> {
  const res = await fetch(`${started.origin}/settings/top-up`, { method: 'POST', headers: { authorization: `Bearer ${started.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ credits: 100 }) });
  expect(res.status).toBeLessThan(300);
}
