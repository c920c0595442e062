// Issue 10, finding 2: an authentic event that waited at the relay gets a fresh delivered_at, and nothing else changes.
import { describe, expect, it } from 'vitest';
import { sign, verifySignature } from 'cliphook';
import type { EventFrame } from '../../src/relay/frames.js';
import { resolveListenerOptions } from '../../src/relay/listener-options.js';
import { LocalHop } from '../../src/relay/local-hop.js';
import { resign, topLevelString } from '../../src/relay/resign.js';
import { eventText, SECRET, signedHeaders } from './fixtures.js';

const T0 = Date.parse('2026-11-21T23:58:50.000Z');
const HOUR = 3_600_000;

function buffered(text: string, receivedAt = T0) {
  const headers = Object.entries(signedHeaders(text, 'dlv_1')).flat();
  return { body: Buffer.from(text), headers, receivedAt };
}

describe('topLevelString', () => {
  it('finds the top-level member only, the last one when repeated, and no value with escapes', () => {
    const at = (text: string) => {
      const found = topLevelString(Buffer.from(text), 'delivered_at');
      return found && Buffer.from(text).toString('utf8', found.start, found.end);
    };
    expect(at('{"a":{"delivered_at":"nested"},"delivered_at":"top"}')).toBe('top');
    expect(at('{"prompt":"\\"delivered_at\\":\\"fake\\"","delivered_at" : "top"}')).toBe('top');
    expect(at('{"delivered_at":"first","delivered_at":"second"}')).toBe('second');
    expect(at('{"delivered_at":"first","delivered_at":null}')).toBeNull();
    expect(at('{"delivered_at":"a\\u0031"}')).toBeNull();
    expect(at('[{"delivered_at":"in an array"}]')).toBeNull();
    expect(at('{"list":["delivered_at","x"],"delivered_at":"top"}')).toBe('top');
    expect(at('{"delivered_at":"unterminated')).toBeNull();
  });
});

describe('resign', () => {
  it('rewrites only the delivered_at bytes of an event that was fresh on arrival and is old now, signed with the secret', () => {
    const text = eventText(7, { deliveredAt: new Date(T0).toISOString() });
    const now = T0 + HOUR;
    const fresh = resign(buffered(text), SECRET, now)!;
    expect(fresh).not.toBeNull();
    const expected = text.replace(new Date(T0).toISOString(), new Date(now).toISOString());
    expect(fresh.body.toString()).toBe(expected); // escaped slashes, non-ASCII, big integers: all as sent
    const signature = fresh.headers[fresh.headers.findIndex((name) => name === 'x-service-signature') + 1];
    expect(signature).toBe(sign(expected, SECRET));
    expect(verifySignature(fresh.body, signature, SECRET)).toBe(true);
    expect(fresh.headers).toEqual(expect.arrayContaining(['x-service-delivery', 'dlv_1', 'x-service-event', 'video.completed']));
  });

  it('leaves alone an event still fresh, one stale when the relay took it (a replayed capture), and a body without delivered_at', () => {
    const text = eventText(7, { deliveredAt: new Date(T0).toISOString() });
    expect(resign(buffered(text), SECRET, T0 + 30_000)).toBeNull();
    // Taken by the relay an hour after it was signed: not made fresh, so the receiver's window still refuses it.
    expect(resign(buffered(text, T0 + HOUR), SECRET, T0 + HOUR)).toBeNull();
    expect(resign(buffered('{"event":"video.completed"}'), SECRET, T0 + HOUR)).toBeNull();
    expect(resign(buffered('not json "delivered_at":"2026-11-21T23:58:50.000Z"'), SECRET, T0 + HOUR)).toBeNull();
  });

  it('re-signs an event whose delivered_at is ahead of or behind the listener clock by more than 30 s (clock skew)', () => {
    const text = eventText(7, { deliveredAt: new Date(T0).toISOString() });
    expect(resign(buffered(text), SECRET, T0 - 10 * 60_000)).not.toBeNull();
    expect(resign(buffered(text), SECRET, T0 + 10 * 60_000)).not.toBeNull();
  });
});

describe('resign on a body with delivered_at more than once', () => {
  it('re-signs a stale top-level delivered_at even when a nested one after it is fresh', () => {
    const now = T0 + HOUR;
    const text = `{"delivered_at":"${new Date(T0).toISOString()}","data":{"delivered_at":"${new Date(now).toISOString()}"}}`;
    expect(resign(buffered(text), SECRET, now)?.body.toString()).toBe(text.replace(new Date(T0).toISOString(), new Date(now).toISOString()));
  });

  it('leaves alone a body whose key repeats with an escape: what the receiver reads would not be the value written', () => {
    const old = new Date(T0).toISOString();
    for (const text of [`{"delivered_at":"${old}","delivered\\u005fat":"${old}"}`, `{"delivered\\u005fat":"${old}","delivered_at":"${old}"}`]) {
      expect(JSON.parse(text).delivered_at).toBe(old);
      const fresh = resign(buffered(text), SECRET, T0 + HOUR);
      // Either not re-signed, or re-signed so that the value a receiver reads is the fresh one.
      if (fresh) expect(JSON.parse(fresh.body.toString()).delivered_at).toBe(new Date(T0 + HOUR).toISOString());
    }
    // The escaped key last: JSON.parse keeps its stale value, which a rewrite of the plain key would not change.
    expect(resign(buffered(`{"delivered_at":"${old}","delivered\\u005fat":"${old}"}`), SECRET, T0 + HOUR)).toBeNull();
  });
});

describe('resign on a body with spaces around the colon', () => {
  it('still finds delivered_at by the full scan', () => {
    const text = `{"event":"video.completed","delivered_at" : "${new Date(T0).toISOString()}"}`;
    expect(resign(buffered(text), SECRET, T0 + HOUR)?.body.toString()).toBe(`{"event":"video.completed","delivered_at" : "${new Date(T0 + HOUR).toISOString()}"}`);
  });
});

/** The local hop of a listener with `secret` whose clock reads `now`; nothing is forwarded. */
function hop(secret: string | string[], now: number, forwardInvalid = false) {
  const options = resolveListenerOptions({ relayUrl: 'http://relay.test', channel: 'c', token: 't', forwardTo: 'http://127.0.0.1:9/hooks', secret, forwardInvalid, clock: () => now });
  return new LocalHop(options, { forward: () => Promise.reject(new Error('not in this test')), close: () => undefined });
}

/** An event signed with `secret` at T0 and taken by the relay then. */
function eventFrame(text: string, signature: string): EventFrame {
  const headers = Object.entries({ ...signedHeaders(text, 'dlv_1'), 'x-service-signature': signature }).flat();
  return { type: 'event', seq: 1, receivedAt: T0, method: 'POST', path: '', query: '', headers, body: Buffer.from(text), backlog: true, replay: false };
}

const signatureIn = (frame: EventFrame) => frame.headers[frame.headers.indexOf('x-service-signature') + 1];

describe('re-signing in the local hop', () => {
  const text = eventText(7, { deliveredAt: new Date(T0).toISOString() });

  it('re-signs with the secret that verified, so an event forged with an old leaked secret never comes out signed with the new one', () => {
    const { event, outgoing } = hop(['whsec_new', 'whsec_old_leaked'], T0 + HOUR).prepare(eventFrame(text, sign(text, 'whsec_old_leaked')));
    expect(event).toMatchObject({ signatureValid: true, resigned: true });
    expect(verifySignature(outgoing.body, signatureIn(outgoing), 'whsec_old_leaked')).toBe(true);
    expect(verifySignature(outgoing.body, signatureIn(outgoing), 'whsec_new')).toBe(false);
    // One signed with the new secret is re-signed with it.
    const current = hop(['whsec_new', 'whsec_old_leaked'], T0 + HOUR).prepare(eventFrame(text, sign(text, 'whsec_new'))).outgoing;
    expect(signatureIn(current)).toBe(sign(current.body, 'whsec_new'));
  });

  it('with forwardInvalid, forwards a forged event buffered an hour as it came: not re-signed, its forged signature unchanged', () => {
    const forged = sign(text, 'whsec_guess');
    const { event, outgoing, refusal } = hop(SECRET, T0 + HOUR, true).prepare(eventFrame(text, forged));
    expect(refusal).toBeNull();
    expect(event).toMatchObject({ signatureValid: false, resigned: false });
    expect(signatureIn(outgoing)).toBe(forged);
    expect(outgoing.body.toString()).toBe(text);
  });
});
