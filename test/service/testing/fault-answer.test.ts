import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../../src/service/contract/common.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';
import { FAULT_RETRY_AFTER, faultError, faultProblem } from '../../../src/service/testing/fault-answer.js';

const ORIGIN = 'http://127.0.0.1:8080';
const context = { ruleId: 'flt_3', instance: '/v1/videos/7', origin: ORIGIN };

describe('faultProblem: a fault answers the problem the service would (issue 22)', () => {
  it('a busy code: 503, retryable, Retry-After 5 as the service sends, and a sentence naming the rule', () => {
    const { status, headers, body } = faultProblem('upstream_busy', context);
    expect(status).toBe(503);
    expect(headers).toEqual({ 'content-type': 'application/problem+json', 'retry-after': '5' });
    expect(body).toMatchObject({ status: 503, code: 'upstream_busy', retryable: true, retry_after: 5, instance: '/v1/videos/7', detail: 'Fault rule flt_3 answers upstream_busy; nothing was done.', user_action: null });
    expect(Problem.safeParse(body).success).toBe(true);
  });

  it('the rule’s retry_after replaces the default; 500s carry none, as the service’s do; a code that is not retryable never does', () => {
    expect(faultProblem('rate_limit_exceeded', { ...context, retryAfter: 2 }).headers['retry-after']).toBe('2');
    expect(faultProblem('rate_limit_exceeded', context).body.retry_after).toBe(FAULT_RETRY_AFTER.rate_limit_exceeded);
    expect(faultProblem('internal_error', context)).toMatchObject({ status: 500, headers: { 'content-type': 'application/problem+json' }, body: { retryable: true, retry_after: null } });
    expect(faultProblem('not_found', { ...context, retryAfter: 9 })).toMatchObject({ status: 404, body: { retryable: false, retry_after: null } });
  });

  it('adds the members of spec 7 by code: 402 required and balance with the top-up link, asset_ids, reason_code, item_index', () => {
    expect(faultProblem('insufficient_credits', { ...context, balance: 500 }).body).toMatchObject({ status: 402, required: 501, balance: 500, user_action: { kind: 'top_up', url: `${ORIGIN}/settings/top-up` } });
    expect(faultProblem('insufficient_credits', context).body).toMatchObject({ required: 10, balance: 0 });
    expect(faultProblem('moderation_pending', context).body).toMatchObject({ status: 503, asset_ids: [], retry_after: 5 });
    expect(faultProblem('photo_rejected', context).body).toMatchObject({ status: 422, reason_code: 'simulated', user_action: { kind: 'upload_photo', url: null } });
    expect(faultProblem('consent_required', { ...context, itemCodes: ['consent_required', 'batch_too_large'] }).body.item_index).toBe(0);
    expect(faultProblem('batch_too_large', { ...context, itemCodes: ['consent_required', 'batch_too_large'] }).body.item_index).toBeUndefined();
  });

  it('a 401 carries the WWW-Authenticate challenge (spec 5.4)', () => {
    expect(faultProblem('invalid_api_key', context)).toMatchObject({ status: 401, headers: { 'www-authenticate': 'Bearer realm="cliphook", error="invalid_token"' } });
    expect(faultProblem('invalid_auth_header', context).headers['www-authenticate']).toBe('Bearer realm="cliphook"');
  });

  it('faultError is the same answer as a service error, for a pipeline that writes problems itself', () => {
    const error = faultError('concurrency_limit', { ...context, retryAfter: 4 });
    expect(error).toMatchObject({ code: 'concurrency_limit', detail: 'Fault rule flt_3 answers concurrency_limit; nothing was done.', retryAfter: 4 });
    expect(faultError('moderation_pending', context)).toMatchObject({ retryAfter: 5, extra: { asset_ids: [] } });
    expect(faultError('not_found', context)).toMatchObject({ retryAfter: undefined, extra: undefined });
  });
});

describe('faultProblem against the running service: the same status, members and Retry-After', () => {
  let svc: StartedService;
  let poor: StartedService;
  beforeAll(async () => {
    svc = await startService();
    poor = await startService({ balance: 5 });
  });
  afterAll(async () => {
    await svc.close();
    await poor.close();
  });

  const shape = (status: number, headers: Headers | Record<string, string>, body: Record<string, unknown>) => ({
    status,
    retryAfter: headers instanceof Headers ? headers.get('retry-after') : (headers['retry-after'] ?? null),
    members: Object.keys(body).sort(),
    code: body.code,
    retryable: body.retryable,
    userAction: body.user_action === null ? null : (body.user_action as { kind: string }).kind,
  });

  it('upstream_busy of POST /v1/videos', async () => {
    const res = await fetch(`${svc.url}/videos`, { method: 'POST', headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a fox simulate:request:upstream_busy' }) });
    const real = shape(res.status, res.headers, (await res.json()) as Record<string, unknown>);
    const fault = faultProblem('upstream_busy', { ...context, instance: '/v1/videos', origin: svc.origin });
    expect(shape(fault.status, fault.headers, fault.body)).toEqual(real);
  });

  it('insufficient_credits of a keyed GET below 10 credits', async () => {
    const res = await fetch(`${poor.url}/account`, { headers: { authorization: `Bearer ${poor.apiKey}` } });
    const body = (await res.json()) as Record<string, unknown>;
    const fault = faultProblem('insufficient_credits', { ...context, instance: '/v1/account', origin: poor.origin, balance: 5 });
    expect(shape(fault.status, fault.headers, fault.body)).toEqual(shape(res.status, res.headers, body));
    expect((fault.body.user_action as { url: string }).url).toBe((body.user_action as { url: string }).url);
  });
});
