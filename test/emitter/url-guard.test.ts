import { afterEach, describe, expect, it } from 'vitest';
import { resolver } from '../helpers/resolver.js';
import { checkCallbackUrl, createEmitter, InvalidCallbackUrlError, MemoryOutbox } from 'cliphook';
import { answering, completedPayload, settled, type TestServer } from './helpers.js';

const strict = { allowPrivateNetworks: false };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('checkCallbackUrl', () => {
  it('accepts an https URL of a name or a public address', () => {
    expect(checkCallbackUrl('https://hooks.example.com/webhooks?x=1', strict).hostname).toBe('hooks.example.com');
    expect(checkCallbackUrl('https://93.184.215.14/', strict).hostname).toBe('93.184.215.14');
    expect(checkCallbackUrl(`https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`, strict)).toBeInstanceOf(URL);
  });

  it.each([
    ['http://example.com/', /https/],
    ['ftp://example.com/', /https/],
    ['https://user@example.com/', /credentials/],
    ['https://:secret@example.com/', /credentials/],
    [`https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`, /2048/],
    ['https://[2002:7f00:1::]/', /loopback/],
    ['https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', /loopback/],
    ['https://[::ffff:0:a9fe:a9fe]/', /metadata/],
    ['https://127.0.0.1/', /loopback/],
    ['https://[::ffff:127.0.0.1]/', /loopback/],
    ['https://169.254.169.254/latest/meta-data', /metadata/],
    ['https://[fd00:ec2::254]/', /metadata/],
    ['https://10.1.2.3/', /private/],
    ['https://100.64.0.1/', /cgnat/],
    ['https://0.0.0.0/', /unspecified/],
    ['https://[ff02::1]/', /multicast/],
    ['https://[fe80::1]/', /link-local/],
    ['/relative', /absolute/],
  ])('refuses %s', (url, reason) => {
    const error = (() => {
      try {
        checkCallbackUrl(url, strict);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(InvalidCallbackUrlError);
    expect((error as InvalidCallbackUrlError).code).toBe('invalid_callback_url');
    expect((error as Error).message).toMatch(reason);
  });

  it('refuses a URL that is longer than 2048 characters once normalised, the form that is stored', () => {
    // 1,020 characters as typed, 6,020 once each é is percent-encoded
    expect(() => checkCallbackUrl(`https://example.com/${'é'.repeat(1000)}`, strict)).toThrow(/once normalised; the limit is 2048/);
  });

  it('allows http and private addresses with allowPrivateNetworks', () => {
    expect(checkCallbackUrl('http://127.0.0.1:3000/webhooks', { allowPrivateNetworks: true }).port).toBe('3000');
    expect(() => checkCallbackUrl('http://u:p@localhost/', { allowPrivateNetworks: true })).toThrow(InvalidCallbackUrlError);
  });
});

describe("the emitter's connect-time check (the guard alone: test/http/outbound-guard.test.ts)", () => {
  it('refuses, at connect time, a name that resolves to loopback, and fails the delivery without a request', async () => {
    const server: TestServer = await answering(200);
    cleanups.push(() => server.close());
    const lookup = resolver('127.0.0.1');
    const emitter = createEmitter({ store: new MemoryOutbox(), lookup });
    cleanups.push(() => emitter.stop());
    await emitter.start();
    const port = new URL(server.url).port;
    // Accepted when sent (a name), refused when the socket would connect.
    const sent = await emitter.send({ url: `https://hooks.example.com:${port}/webhooks`, secret: 'whsec_x', event: 'video.completed', payload: completedPayload() });
    const done = await settled(emitter, sent.id);
    expect(lookup.calls).toEqual(['hooks.example.com']);
    expect(done.state).toBe('failed');
    expect(done.attempts).toHaveLength(1);
    expect(done.attempts[0]!.status).toBeNull();
    expect(done.attempts[0]!.error).toMatch(/^invalid_callback_url: .*loopback.*hooks\.example\.com resolves to 127\.0\.0\.1/);
    expect(server.received).toHaveLength(0);
  });
});
