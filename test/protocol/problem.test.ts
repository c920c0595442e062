import { describe, expect, it } from 'vitest';
import { PROBLEM_CODES, PROBLEM_CONTENT_TYPE, isProblemCode, problem } from '../../src/index.js';
import { problemHeaders } from '../../src/protocol/problem.js';

describe('problem', () => {
  it('has every member of spec section 7', () => {
    const body = problem('insufficient_credits', { detail: 'You need 45 credits.', instance: '/v1/videos', extra: { required: 45, balance: 12 } });
    expect(body).toMatchObject({
      type: 'urn:cliphook:problem:insufficient_credits',
      title: 'Insufficient credits',
      status: 402,
      detail: 'You need 45 credits.',
      instance: '/v1/videos',
      code: 'insufficient_credits',
      error: 'You need 45 credits.',
      retryable: true, // issue 21: spec 7 defines retryable as "can later succeed unchanged"; a 402 does after a top-up
      retry_after: null,
      user_action: { kind: 'top_up', url: null },
      required: 45,
      balance: 12,
    });
    expect(body.trace_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('sends retry_after as Retry-After and marks temporary codes retryable', () => {
    const body = problem('rate_limit_exceeded', { retryAfter: 12 });
    expect(body.retryable).toBe(true);
    expect(problemHeaders(body)).toEqual({ 'content-type': PROBLEM_CONTENT_TYPE, 'retry-after': '12' });
    expect(problemHeaders(problem('not_found'))).toEqual({ 'content-type': 'application/problem+json' });
  });

  it('maps the spec codes to their statuses', () => {
    const expected: Record<string, number> = {
      missing_input: 400, invalid_callback_url: 400, invalid_api_key: 401, insufficient_credits: 402,
      invalid_signature: 403, not_found: 404, idempotency_in_progress: 409, link_expired: 410, too_large: 413,
      body_too_large: 413, consent_required: 422, rate_limit_exceeded: 429, region_unavailable: 451,
      internal_error: 500, upstream_busy: 503,
    };
    for (const [code, status] of Object.entries(expected)) {
      expect(isProblemCode(code)).toBe(true);
      expect(PROBLEM_CODES[code as keyof typeof PROBLEM_CODES].status).toBe(status);
    }
    expect(isProblemCode('toString')).toBe(false);
  });

  it('lets a context override the status of a reused code', () => {
    expect(problem('invalid_signature', { status: 401 }).status).toBe(401);
  });

  it('never lets an extra member replace a standard one: the body always says its own code and status', () => {
    const body = problem('insufficient_credits', { extra: { status: 200, code: 'ok', retryable: false, required: 45 } });
    expect(body).toMatchObject({ status: 402, code: 'insufficient_credits', retryable: true, required: 45 });
    expect(Object.keys(body).slice(-1)).toEqual(['required']);
  });
});
