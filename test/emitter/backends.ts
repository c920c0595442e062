import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach } from 'vitest';
import { bullmqQueue, createEmitter, MemoryOutbox, type EmitterOptions, type WebhookEmitter } from 'cliphook';
import { redisAvailable, startRedis } from '../helpers/redis.js';
import type { TestServer } from './helpers.js';

/** Where a test's deliveries live: the same place given to a second emitter is a restart (or another process). */
export type Place = MemoryOutbox | { name: string };

/** One backend of the emitter, as the shared behaviour tests drive it. */
export interface Backend {
  name: string;
  /** A fresh, empty place. */
  place(): Place;
  /** The options that put an emitter on `place`. */
  options(place: Place): EmitterOptions;
  /** How many deliveries `place` holds. */
  stored(place: Place): Promise<number>;
}

export const outboxBackend: Backend = {
  name: 'memory outbox',
  place: () => new MemoryOutbox(),
  options: (place) => ({ store: place as MemoryOutbox }),
  stored: async (place) => (place as MemoryOutbox).size,
};

/**
 * The backends a test file runs its shared tests on: the outbox, and BullMQ on a private redis-server
 * started for the file (skipped with one line on a machine without redis-server; an error in CI).
 */
export async function backends(): Promise<Backend[]> {
  if (!redisAvailable()) return [outboxBackend];
  const redis = await startRedis();
  const client = new Redis(redis.url);
  afterAll(async () => {
    client.disconnect();
    await redis.stop();
  });
  return [outboxBackend, bullmqBackend(redis.url, client)];
}

/** BullMQ on the Redis at `url`: every place is a queue of its own. */
export function bullmqBackend(url: string, client: Redis): Backend {
  return {
    name: 'bullmq',
    place: () => ({ name: `test-${randomBytes(6).toString('hex')}` }),
    options: (place) => ({ queue: bullmqQueue({ url, name: (place as { name: string }).name }) }),
    stored: (place) => client.hlen(`cliphook:${(place as { name: string }).name}:emitter:records`),
  };
}

/**
 * Emitters and servers for the tests of one backend, stopped after each test: `emitterFor` makes an
 * emitter that may call local addresses, on a fresh place unless given one; `track` closes a server.
 */
export function useBackend(backend: Backend) {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    emitterFor(options: EmitterOptions = {}, place: Place = backend.place()): WebhookEmitter {
      const emitter = createEmitter({ ...backend.options(place), allowPrivateNetworks: true, ...options });
      cleanups.push(() => emitter.stop());
      return emitter;
    },
    track<T extends TestServer>(server: T): T {
      cleanups.push(() => server.close());
      return server;
    },
  };
}
