import { createServer } from 'node:net';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cli } from './helpers.js';

// Every command that takes --redis, pointed at a Redis nobody listens on: one line naming the URL (without
// its password) and the cause, exit 1; never ioredis's "Reached the max retries per request limit".

let port: number;
beforeAll(async () => {
  // A port that was just free: connecting to it is refused.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => vi.restoreAllMocks());

const COMMANDS: Record<string, string[]> = {
  'inbox list': ['inbox', 'list'],
  'inbox show': ['inbox', 'show', 'dlv_missing'],
  'inbox replay': ['inbox', 'replay', 'dlv_missing'],
  'inbox purge': ['inbox', 'purge', '--state', 'dead'],
  'deliveries list': ['deliveries', 'list'],
  'deliveries show': ['deliveries', 'show', 'dlv_missing'],
  'deliveries redeliver': ['deliveries', 'redeliver', 'dlv_missing'],
  relay: ['relay', '--port', '0'],
  serve: ['serve', '--port', '0', '--no-inspect'],
};

describe('--redis to a Redis that cannot be reached', () => {
  for (const [name, args] of Object.entries(COMMANDS)) {
    it(`cliphook ${name}: one line with the URL and the cause, exit 1`, async () => {
      const result = await cli(...args, '--redis', `redis://app:s3cret@127.0.0.1:${port}/0`);
      expect(result.stderr).toBe(`cliphook: cannot reach Redis at redis://127.0.0.1:${port}/0 (--redis): connect ECONNREFUSED 127.0.0.1:${port}\n`);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
    });
  }
});
