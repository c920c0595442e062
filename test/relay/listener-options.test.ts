import { expect, it } from 'vitest';
import { realScheduler } from '../../src/relay/heartbeat.js';
import { resolveListenerOptions } from '../../src/relay/listener-options.js';

const base = { relayUrl: 'https://relay.example.com', channel: 'c', token: 't', forwardTo: 'http://localhost:3000/webhooks' };

it('fills in the defaults, parses forwardTo and resolves the reconnect settings', () => {
  expect(resolveListenerOptions(base)).toEqual({
    ...base,
    forwardTo: new URL('http://localhost:3000/webhooks'),
    secret: undefined,
    forwardInvalid: false,
    methods: new Set(['POST']),
    events: undefined,
    localTimeoutMs: 8_500,
    maxReplyBytes: 1024 * 1024,
    pingIntervalMs: 10_000,
    readDeadlineMs: 20_000,
    clock: Date.now,
    scheduler: realScheduler,
    reconnect: { minTimeout: 500, maxTimeout: 30_000, factor: 2, randomize: true },
  });
  expect(resolveListenerOptions({ ...base, reconnect: { maxTimeout: 1000, randomize: false } }).reconnect).toEqual({ minTimeout: 500, maxTimeout: 1000, factor: 2, randomize: false });
});

it('names each option it refuses', () => {
  expect(() => resolveListenerOptions({ ...base, channel: '' })).toThrow(/`channel`/);
  expect(() => resolveListenerOptions({ ...base, secret: [] })).toThrow(/`secret`/);
  expect(() => resolveListenerOptions({ ...base, secret: ['whsec_a', ''] })).toThrow(/`secret`/);
  expect(() => resolveListenerOptions({ ...base, methods: [] })).toThrow(/`methods`/);
  expect(() => resolveListenerOptions({ ...base, methods: ['GE T'] })).toThrow(/`methods`/);
  expect(() => resolveListenerOptions({ ...base, forwardInvalid: 'yes' as unknown as boolean })).toThrow(/`forwardInvalid`/);
  expect(resolveListenerOptions({ ...base, methods: ['get', 'POST'] }).methods).toEqual(new Set(['GET', 'POST']));
  expect(() => resolveListenerOptions({ ...base, maxReplyBytes: 1.5 })).toThrow(/`maxReplyBytes`/);
  expect(() => resolveListenerOptions({ ...base, pingIntervalMs: -1 })).toThrow(/`pingIntervalMs`/);
  expect(() => resolveListenerOptions({ ...base, clock: 0 as unknown as () => number })).toThrow(/`clock`/);
  expect(() => resolveListenerOptions({ ...base, reconnect: { factor: 0.5 } })).toThrow(/`reconnect`/);
});
