import { readFileSync } from 'node:fs';
import { afterEach, expect, it, vi } from 'vitest';
import { createRelayServer, MemoryDeliveryStore } from 'cliphook';
import { listen, type ListenIo } from '../../src/cli/commands/listen.js';
import { start } from '../../examples/express-receiver.js';
import { cli } from '../cli/helpers.js';
import { testdir } from '../relay/fixtures.js';

// Issue 20 item 18: docs/relay.md's "Try it locally" sent a test event to a channel whose listen
// forwarded it to a receiver the section never started. The section's commands are checked here as
// written, then run as written but on free ports (3000 and 8787 become port 0): relay, listen, the Express
// example as the receiver, trigger.

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function documentedCommands(): string[] {
  const doc = readFileSync(new URL('../../docs/relay.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('Try it locally'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block.trim().split('\n').map((line) => line.replace(/\s+#.*$/, '').trim());
}

const plain = (text: string) => text;

/** `cliphook listen` in this process, as its flags say; resolves once it is ready, with a stop(). */
async function startListen(relayUrl: string, forwardTo: string, state: string) {
  const controller = new AbortController();
  const lines: string[] = [];
  const io: ListenIo = { out: (line) => void lines.push(line), err: (line) => void lines.push(line), signal: controller.signal, now: () => new Date(), palette: { bold: plain, dim: plain, green: plain, yellow: plain, red: plain, cyan: plain } };
  const running = listen({ forwardTo, relay: relayUrl, secret: 'whsec_test', state }, io);
  await vi.waitFor(() => expect(lines.some((line) => line.startsWith('Ready!'))).toBe(true));
  return { url: /^Ready! Forwarding (\S+)/m.exec(lines.join('\n'))![1]!, lines, stop: () => (controller.abort(), running) };
}

it('docs/relay.md "Try it locally": relay, listen, a receiver and trigger, as written, reach the receiver', async () => {
  expect(documentedCommands()).toEqual([
    'npx cliphook relay',
    'npx cliphook listen --forward-to http://localhost:3000/webhooks --secret whsec_test',
    'SIGNING_SECRET=whsec_test PORT=3000 node --import tsx examples/express-receiver.ts',
    'npx cliphook trigger video.completed --url http://127.0.0.1:8787/in/<channel> --secret whsec_test',
  ]);
  const { dir, cleanup } = await testdir();
  cleanups.push(cleanup);
  // `cliphook relay` is this server on 127.0.0.1 (its flags are tested in test/relay/relay-command.test.ts).
  const relay = createRelayServer({ file: false });
  const { url: relayUrl } = await relay.listen(0, '127.0.0.1');
  cleanups.push(() => relay.close());
  const logged: string[] = [];
  const receiver = await start({ secret: 'whsec_test', port: 0, store: new MemoryDeliveryStore(), log: (line) => void logged.push(line) });
  cleanups.push(receiver.close);
  const state = `${dir}/listen.json`;
  const outbox = `${dir}/outbox.json`;

  // Sent before listen runs, the event waits at the relay, and trigger says so.
  const first = await startListen(relayUrl, receiver.url, state);
  await first.stop();
  const early = await cli('trigger', 'video.completed', '--url', first.url, '--secret', 'whsec_test', '--outbox', outbox);
  expect(early.code).toBe(1);
  expect(early.stderr).toMatch(/is buffered at the relay: no `cliphook listen` is connected to that channel \(503 no_listener\)/);
  // listen comes back on the same channel: the buffered event reaches the receiver.
  const second = await startListen(relayUrl, receiver.url, state);
  cleanups.push(second.stop);
  expect(second.url).toBe(first.url);
  await vi.waitFor(() => expect(logged).toHaveLength(1));
  // And with listen running, trigger delivers at once: exit 0, and the receiver prints the clip.
  const sent = await cli('trigger', 'video.completed', '--url', second.url, '--secret', 'whsec_test', '--outbox', outbox);
  expect(sent).toMatchObject({ code: 0, stdout: expect.stringMatching(/<-- \[200\] POST /) });
  expect(logged).toEqual([expect.stringMatching(/^clip \d+ is ready/), expect.stringMatching(/^clip \d+ is ready/)]);
  expect(second.lines.join('\n')).toContain(`<-- [200] POST ${receiver.url}`);
});
