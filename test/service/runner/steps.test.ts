import { describe, expect, it } from 'vitest';
import { refusalOf, ServiceError } from '../../../src/service/contract/problems.js';
import { WRITTEN } from '../../../src/service/runner/chain.js';
import { z } from 'zod';
import { command, idempotency, parse, parseInput, unitOfWork, type KeyRecords } from '../../../src/service/runner/steps.js';
import { VideoRequest } from '../../../src/service/contract/videos.js';
import { ROUTES, type RouteSpec } from '../../../src/service/contract/routes.js';
import { callerWith, fakeRun } from './fixtures.js';

const next = async () => undefined;
const body = { ok: true as const, value: { prompt: 'a fox', duration: 5 } };

function records(start: Awaited<ReturnType<KeyRecords['begin']>>, warnings: string[] = []): KeyRecords {
  return { begin: async () => start, fingerprint: (method, path) => `${method} ${path}`, warn: (message) => void warnings.push(message) };
}

describe('the idempotency step (spec 7, issue 31 item 1)', () => {
  it('replays a stored answer without going on, whatever comes after', async () => {
    const run = fakeRun('createVideo', { json: body, idempotencyKey: 'k-1' });
    run.headers = { 'x-ratelimit-limit': '60' };
    let went = false;
    await idempotency(records({ kind: 'replay', response: { status: 202, body: { id: 7 } } }))(run, async () => void (went = true));
    expect(went).toBe(false);
    expect(run.exchange.replayed).toBe(true);
    expect(run.outcome).toEqual({ kind: 'json', status: 202, body: { id: 7 }, headers: { 'x-ratelimit-limit': '60', 'idempotent-replayed': 'true' } });
  });

  it('holds a fresh key through the rest, shares the answer after it, and releases it on a refusal', async () => {
    const told: unknown[] = [];
    const lease = { kind: 'fresh' as const, finish: (response: unknown) => void told.push(['finish', response]), share: async (response: unknown) => void told.push(['share', response]) };
    const run = fakeRun('createVideo', { json: body, idempotencyKey: 'k-1' });
    await idempotency(records(lease))(run, async () => void (run.value = { id: 8 }));
    expect(told).toEqual([['share', { status: 202, body: { id: 8 } }]]);
    told.length = 0;
    const refused = fakeRun('createVideo', { json: body, idempotencyKey: 'k-2' });
    await expect(idempotency(records(lease))(refused, async () => { throw new ServiceError('insufficient_credits', 'low'); })).rejects.toMatchObject({ code: 'insufficient_credits' });
    expect(told).toEqual([['finish', null], ['share', null]]);
  });

  it('keeps a key still running, another body, a malformed key and a body that is no JSON for after the floor', async () => {
    for (const [start, key, json, code] of [
      [{ kind: 'in_progress' }, 'k', body, 'idempotency_in_progress'],
      [{ kind: 'reused' }, 'k', body, 'idempotency_key_reused'],
      [{ kind: 'in_progress' }, 'bad key', body, 'invalid_idempotency_key'],
      [{ kind: 'in_progress' }, 'k', { ok: false, error: new ServiceError('invalid_json', 'no') }, 'invalid_json'],
    ] as const) {
      const run = fakeRun('createVideo', { json: json as never, idempotencyKey: key });
      let went = false;
      await idempotency(records(start as never))(run, async () => void (went = true));
      expect(went).toBe(true);
      expect(run.pending?.code).toBe(code);
    }
  });

  it('does nothing on a route without Idempotency-Key', async () => {
    const run = fakeRun('getVideo', { idempotencyKey: 'k' });
    await idempotency(records({ kind: 'reused' }))(run, next);
    expect(run.pending).toBeNull();
  });
});

describe('parse (issue 31, speed)', () => {
  const route = (ROUTES as readonly RouteSpec[]).find((candidate) => candidate.operationId === 'createVideo')!;

  it('parses what is valid once, with no context (zod\'s fast path), and quotes the input only for a refusal', () => {
    const contexts: unknown[] = [];
    const schema = z.object({ id: z.string() });
    const safeParse = schema.safeParse.bind(schema);
    schema.safeParse = ((value: unknown, context?: unknown) => (contexts.push(context), safeParse(value, context as never))) as typeof schema.safeParse;
    expect(parse(schema, { id: 'a' }, route)).toEqual({ id: 'a' });
    expect(contexts).toEqual([undefined]);
    contexts.length = 0;
    expect(() => parse(schema, { id: 1 }, route)).toThrow(ServiceError);
    expect(contexts).toEqual([undefined, { reportInput: true }]);
  });

  it('gives a clip body the same value and the same refusals as a parse with reportInput', () => {
    const valid = { prompt: 'a fox', duration: 5, aspect_ratio: '9:16' };
    expect(parse(VideoRequest, valid, route, 'invalid_json')).toEqual(VideoRequest.safeParse(valid, { reportInput: true }).data);
    for (const invalid of [{ prompt: 5 }, { prompt: 'a fox', duration: 'five' }, { prompt: 'a fox', model: 'nope' }]) {
      const issues = VideoRequest.safeParse(invalid, { reportInput: true }).error!.issues;
      const expected = ServiceError.from(refusalOf(VideoRequest, issues, invalid, { fallback: 'invalid_parameter' }));
      expect(() => parse(VideoRequest, invalid, route, 'invalid_json'), JSON.stringify(invalid)).toThrow(expect.objectContaining({ code: expected.code, detail: expected.detail }));
    }
  });
});

describe('the parse step (issue 31 item 1)', () => {
  it('throws what the idempotency step kept, first', async () => {
    const run = fakeRun('createVideo', { json: body });
    run.pending = new ServiceError('idempotency_key_reused', 'no');
    await expect(parseInput()(run, next)).rejects.toMatchObject({ code: 'idempotency_key_reused' });
  });

  it('parses the path (404 for one the contract refuses), the query and the body by the contract', async () => {
    const got = fakeRun('getVideo', { params: { id: '7' } });
    await parseInput()(got, next);
    expect(got.input.params).toEqual({ id: 7 });
    await expect(parseInput()(fakeRun('getVideo', { params: { id: 'x' } }), next)).rejects.toMatchObject({ code: 'not_found' });
    const made = fakeRun('createVideo', { json: body });
    await parseInput()(made, next);
    expect(made.input.body).toMatchObject({ prompt: 'a fox', duration: 5 });
    expect(made.exchange.body).toEqual(body.value);
    await expect(parseInput()(fakeRun('createVideo', { json: { ok: true, value: [1] } }), next)).rejects.toMatchObject({ code: 'invalid_json' });
  });

  it('parses the body the idempotency step read without reading it again, as a plain step (issue 31: one read)', async () => {
    let reads = 0;
    const run = fakeRun('createVideo', { json: body });
    run.request.json = async () => (reads++, body);
    await idempotency({ begin: () => ({ kind: 'fresh', finish: () => undefined, share: () => undefined }), fingerprint: () => 'f', warn: () => undefined })(run, async () => {
      const rest = Promise.resolve();
      expect(parseInput()(run, () => rest)).toBe(rest);
    });
    expect(reads).toBe(1);
    expect(run.input.body).toMatchObject({ prompt: 'a fox', duration: 5 });
  });
});

describe('the unit and command steps (issue 31 item 1)', () => {
  const store = { unit: async <R>(run: () => Promise<R>) => run() };

  it('runs the command on the parsed input, and the fresh key joins its commit', async () => {
    const finished: unknown[] = [];
    const run = fakeRun('createVideo', { command: (input) => ({ made: input }) });
    run.caller = callerWith(100);
    run.input = { params: {}, query: {}, body: { prompt: 'a fox' } };
    run.lease = { finish: (response) => void finished.push(response), share: async () => undefined };
    await unitOfWork(store)(run, () => command(run, next));
    expect(run.value).toMatchObject({ made: { body: { prompt: 'a fox' } } });
    expect(finished).toEqual([{ status: 202, body: run.value }]);
  });

  it('keeps no answer for a command that wrote its own', async () => {
    const finished: unknown[] = [];
    const run = fakeRun('getMedia', { command: () => WRITTEN });
    run.lease = { finish: (response) => void finished.push(response), share: async () => undefined };
    await unitOfWork(store)(run, () => command(run, next));
    expect(finished).toEqual([null]);
  });

  it('commits a refusal that keeps what it made, and throws it after the commit', async () => {
    let committed = false;
    const keeping = { unit: async <R>(run: () => Promise<R>) => { const value = await run(); committed = true; return value; } };
    const run = fakeRun('createVideo', { command: () => { throw new ServiceError('moderation_pending', 'later', { keep: true }); } });
    await expect(unitOfWork(keeping)(run, () => command(run, next))).rejects.toMatchObject({ code: 'moderation_pending' });
    expect(committed).toBe(true);
  });
});
