// Your integration's tests against the simulated service, in process (the stripe-mock idea, with state,
// webhooks and a clock your test moves): start it, point your client at `url`, advance time, assert.
// Run: node --import tsx examples/service-in-tests.ts
import { pathToFileURL } from 'node:url';
import { startService } from 'cliphook/service';

/** Creates a clip as your app would, lets the simulated clock run it to the end, and returns what GET /videos/{id} says. */
export async function makeClip(prompt: string): Promise<{ status: string; video_url: string | null; credits_used: number }> {
  const svc = await startService({ speed: 'fast' });
  try {
    const headers = { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' };
    const created = (await (await fetch(`${svc.url}/videos`, { method: 'POST', headers, body: JSON.stringify({ prompt, duration: 5 }) })).json()) as { poll_url: string };
    // A clip takes a few seconds at --speed fast: move the clock instead of waiting.
    await svc.clock.advance(60_000);
    return (await (await fetch(created.poll_url, { headers })).json()) as { status: string; video_url: string | null; credits_used: number };
  } finally {
    await svc.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(await makeClip('a red fox trotting through fresh snow'));
}
