// get_clip at the spec's realistic speed (clips take 1-2 minutes): the 45 s wait ends on the simulated
// clock with the clip still rendering, and a second wait returns as soon as the clip ends.
import { describe, expect, it } from 'vitest';
import { call, connect, start, untilWaiting } from './fixtures.js';

describe('get_clip at speed realistic', () => {
  it('returns the running clip after 45 simulated seconds, and the ended clip from a later call', async () => {
    const started = await start({ speed: 'realistic' });
    const client = await connect(started);
    const made = await call(client, 'create_clip', { prompt: 'a slow tide', duration: 5, max_credits: 10 });
    expect(made.isError).toBe(false);
    const id = made.data.id;

    const before = started.clock.timers;
    const first = call(client, 'get_clip', { clip_id: id });
    await untilWaiting(started, before);
    await started.clock.advance(45_000);
    const waited = await first;
    expect(waited.isError).toBe(false);
    expect(['pending', 'generating']).toContain(waited.data.status);

    // Each further call waits up to 45 s more; the clip ends within a few of them, and the call that sees it end returns it.
    let latest = waited;
    for (let tries = 0; tries < 6 && ['pending', 'generating'].includes(String(latest.data.status)); tries++) {
      const timers = started.clock.timers;
      const next = call(client, 'get_clip', { clip_id: id });
      await untilWaiting(started, timers);
      await started.clock.advance(45_000);
      latest = await next;
    }
    expect(['done', 'error']).toContain(latest.data.status);
    expect(latest.data.progress === '100%' || latest.data.status === 'error').toBe(true);
  }, 30_000);
});

describe('progress at speed realistic', () => {
  // The hang above came from a progress step of a fractional number of milliseconds: a step fired, worked
  // out its index from the time a hair short of it, and armed itself again at the same instant, forever.
  it.each(Array.from({ length: 40 }, (_, i) => i / 39))('walks 10%…90% once and ends, whatever the plan (random %s)', async (value) => {
    const started = await start({ speed: 'realistic', random: () => value });
    const res = await fetch(`${started.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${started.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a slow tide', duration: 7 }) });
    const { id } = (await res.json()) as { id: number };
    const seen: string[] = [];
    started.service.state.videos.on('change', (video) => video.id === id && video.progress && seen.at(-1) !== video.progress && seen.push(video.progress));
    await started.clock.advance(300_000);
    const video = started.service.state.videos.get(id)!;
    expect(['done', 'error']).toContain(video.status);
    expect(seen.filter((progress) => progress !== '0%' && progress !== '100%')).toEqual(['10%', '20%', '30%', '40%', '50%', '60%', '70%', '80%', '90%']);
  });
});
