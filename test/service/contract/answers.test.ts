import { describe, expect, it } from 'vitest';
import { checkAnswer } from '../../helpers/openapi-answers.js';

// The suite-wide check of answers against the OpenAPI document (test/helpers/setup.ts) must itself work:
// it takes what the document describes and names what it does not.
describe('checkAnswer: an answer against the OpenAPI document', () => {
  const problem = { type: 'urn:cliphook:problem:not_found', title: 'Not found', status: 404, detail: 'No video 9.', instance: '/v1/videos/9', code: 'not_found', error: 'No video 9.', retryable: false, retry_after: null, user_action: null, trace_id: 'abc' };

  it('takes a problem the route lists, and names one it does not', () => {
    expect(checkAnswer({ method: 'GET', path: '/v1/videos/9', status: 404, contentType: 'application/problem+json', body: problem })).toBeNull();
    expect(checkAnswer({ method: 'GET', path: '/v1/videos/9', status: 404, contentType: 'application/problem+json', body: { ...problem, code: 'invalid_duration' } })).toMatch(/does not match/);
    expect(checkAnswer({ method: 'GET', path: '/v1/videos/9', status: 418, contentType: 'application/problem+json', body: problem })).toMatch(/does not list/);
  });

  it('checks a 2xx body field by field, and leaves paths outside the contract alone', () => {
    expect(checkAnswer({ method: 'DELETE', path: '/v1/videos/3', status: 200, contentType: 'application/json', body: { success: true, action: 'deleted', id: 3, credits_refunded: 0 } })).toBeNull();
    expect(checkAnswer({ method: 'DELETE', path: '/v1/videos/3', status: 200, contentType: 'application/json', body: { success: true, action: 'vanished', id: 3, credits_refunded: 0 } })).toMatch(/action/);
    expect(checkAnswer({ method: 'GET', path: '/files/images/x.png', status: 200, contentType: 'image/png', body: null })).toBeNull();
  });
});
