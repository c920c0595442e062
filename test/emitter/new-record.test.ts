import { describe, expect, it } from 'vitest';
import { InvalidCallbackUrlError, type SendInput } from 'cliphook';
import { createRecord } from '../../src/emitter/new-record.js';
import { completedPayload, FakeClock } from './helpers.js';

const clock = new FakeClock(1_000);
const options = { allowPrivateNetworks: false, clock };
const input: SendInput = { url: 'https://:@example.com', secret: 'whsec', event: 'video.completed', payload: completedPayload(7) };

describe('createRecord', () => {
  it('makes a pending record due now, with the URL as parsed and the payload serialised once', () => {
    const record = createRecord(input, options);
    expect(record).toMatchObject({ url: 'https://example.com/', secret: 'whsec', event: 'video.completed', state: 'pending', retry: true, createdAt: 1_000, nextAttemptAt: 1_000, round: 0, attempts: [] });
    expect(record.id).toMatch(/^dlv_[0-9a-f]{24}$/);
    expect(JSON.parse(record.payload)).toMatchObject({ id: 7, event: 'video.completed' });
    expect(Object.keys(record)).toEqual(['id', 'url', 'secret', 'event', 'state', 'retry', 'createdAt', 'nextAttemptAt', 'round', 'attempts', 'payload']);
    expect(createRecord({ ...input, retry: false }, options).retry).toBe(false);
    expect(createRecord(input, options).id).not.toBe(record.id);
  });

  it('throws the same errors as send() did, checking the input, then the URL, the secret, retry', () => {
    expect(() => createRecord(null as unknown as SendInput, options)).toThrow(new TypeError('Expected `send()` to get { url, secret, event, payload }.'));
    expect(() => createRecord({ ...input, url: 'http://example.com/', secret: '' }, options)).toThrow(InvalidCallbackUrlError);
    expect(() => createRecord({ ...input, url: 'https://127.0.0.1/' }, options)).toThrow(InvalidCallbackUrlError);
    expect(createRecord({ ...input, url: 'https://127.0.0.1/' }, { ...options, allowPrivateNetworks: true }).url).toBe('https://127.0.0.1/');
    expect(() => createRecord({ ...input, secret: '', retry: 'no' as unknown as boolean }, options)).toThrow(new TypeError('Expected `secret` to be a non-empty string, got "".'));
    expect(() => createRecord({ ...input, retry: 'no' as unknown as boolean }, options)).toThrow(new TypeError('Expected `retry` to be a boolean, got "no".'));
  });
});
