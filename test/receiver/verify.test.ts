import { describe, expect, it } from 'vitest';
import { WebhookVerificationError, verifyWebhook } from '../../src/index.js';
import { SECRET, completedEvent, failedEvent, signedRequest } from '../helpers/webhooks.js';

describe('verifyWebhook', () => {
  it('returns the delivery id and the typed event', () => {
    const req = signedRequest(failedEvent({ id: 9, error_code: 'upstream_timeout' }), { deliveryId: 'dlv_9' });
    const verified = verifyWebhook(req.body, req.headers, { secret: SECRET });
    expect(verified.deliveryId).toBe('dlv_9');
    expect(verified.event.event).toBe('video.failed');
    if (verified.event.event === 'video.failed') expect(verified.event.error_code).toBe('upstream_timeout');
  });

  it('reads Fetch API Headers and mixed-case header records', () => {
    const req = signedRequest(completedEvent());
    expect(verifyWebhook(req.body, new Headers(req.headers), { secret: SECRET }).event.event).toBe('video.completed');
    const mixed = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.replace(/(^|-)x/g, '$1X'), v]));
    expect(verifyWebhook(Buffer.from(req.body), mixed, { secret: SECRET }).deliveryId).toBe(req.headers['x-service-delivery']);
  });

  it('throws WebhookVerificationError with code and status', () => {
    const req = signedRequest(completedEvent());
    try {
      verifyWebhook(req.body, { ...req.headers, 'x-service-signature': undefined }, { secret: SECRET });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(WebhookVerificationError);
      expect(error).toMatchObject({ code: 'missing_signature', status: 401 });
    }
  });

  it('refuses an X-Service-Event that contradicts the signed body', () => {
    const req = signedRequest(completedEvent());
    expect(() => verifyWebhook(req.body, { ...req.headers, 'x-service-event': 'video.failed' }, { secret: SECRET })).toThrow(
      expect.objectContaining({ code: 'invalid_payload' }),
    );
  });

  it('uses the injected time for the replay window', () => {
    const req = signedRequest(completedEvent({ delivered_at: '2026-01-01T00:00:00Z' }));
    expect(() => verifyWebhook(req.body, req.headers, { secret: SECRET })).toThrow(expect.objectContaining({ code: 'stale_delivery' }));
    expect(verifyWebhook(req.body, req.headers, { secret: SECRET, now: Date.parse('2026-01-01T00:04:00Z') }).event.id).toBeGreaterThan(0);
  });
});
