import { describe, expect, it } from 'vitest';
import { SEED_LIMITS, SeedFixture } from '../../../src/service/testing/contract/seed.js';
import { jsonPointer, pointerRefusal } from '../../../src/service/contract/pointer.js';
import { checkFixture, fixtureError, MAX_LISTED_ERRORS, planSeed, type SeedError } from '../../../src/service/testing/seed.js';

/** The errors of a fixture that must fail. */
function errorsOf(input: unknown): SeedError[] {
  const check = checkFixture(input);
  if (check.ok) throw new Error('expected the fixture to be refused');
  return check.errors;
}

const FIXTURE = {
  accounts: [{ name: 'alice', balance: 500 }, { name: 'bob' }],
  assets: [{ name: 'face', account: 'alice' }, { name: 'bottle', account: 'default', sample: 'product' }],
  clips: [
    { name: 'ready', account: 'alice', status: 'done', model: 'cinema-720p', duration: 20 },
    { name: 'broken', account: 'bob', status: 'error', error_code: 'upstream_timeout', prompt: 'a fox' },
    { name: 'stopped', account: 'default', status: 'cancelled' },
    { name: 'queued', account: 'alice', status: 'pending', callback_url: 'https://example.com/hooks', ratio: '9:16' },
  ],
  images: [
    { name: 'card', account: 'bob', status: 'done', count: 4, quality: 'hd' },
    { name: 'half', account: 'alice', status: 'partial', count: 4 },
    { name: 'blocked', account: 'alice', status: 'failed', error_code: 'prompt_blocked' },
    { name: 'person', account: 'alice', status: 'done', type: 'character' },
  ],
};

describe('checkFixture: a seed fixture, checked whole before anything is made (issue 22)', () => {
  it('takes a fixture that keeps every rule, and an empty one', () => {
    expect(checkFixture(FIXTURE).ok).toBe(true);
    expect(checkFixture({})).toEqual({ ok: true, fixture: {} });
  });

  it('names what is missing by JSON Pointer: an account of an asset, a clip or an image job', () => {
    const errors = errorsOf({ accounts: [{ name: 'alice' }], assets: [{ name: 'a', account: 'carol' }], clips: [{ name: 'c', account: 'dave', status: 'done' }], images: [{ name: 'i', account: 'erin', status: 'done' }] });
    expect(errors.map((error) => error.pointer)).toEqual(['/assets/0/account', '/clips/0/account', '/images/0/account']);
    expect(errors[0]).toEqual({
      code: 'invalid_parameter', pointer: '/assets/0/account', detail: 'assets[0].account "carol" is not an account of the fixture (nor "default").',
      extra: { parameter: 'assets[0].account', allowed_values: ['default', 'alice'] },
    });
  });

  it('refuses what the spec forbids of a clip: a duration outside its model’s (aliases too), an error clip without a code of 2.9, a code on a clip without error', () => {
    const errors = errorsOf({
      clips: [
        { name: 'a', account: 'default', status: 'done', model: 'standard', duration: 20 },
        { name: 'b', account: 'default', status: 'done', model: 'standard-1080p', duration: 16 },
        { name: 'c', account: 'default', status: 'error' },
        { name: 'd', account: 'default', status: 'error', error_code: 'cancelled' },
        { name: 'e', account: 'default', status: 'done', error_code: 'content_rejected' },
        { name: 'f', account: 'default', status: 'cancelled', error_code: 'upstream_error' },
      ],
    });
    expect(errors.map(({ code, pointer }) => [code, pointer])).toEqual([
      ['invalid_duration', '/clips/0/duration'],
      ['invalid_duration', '/clips/1/duration'],
      ['invalid_parameter', '/clips/2/error_code'],
      ['invalid_parameter', '/clips/3/error_code'],
      ['invalid_parameter', '/clips/4/error_code'],
      ['invalid_parameter', '/clips/5/error_code'],
    ]);
    expect(errors[1]).toMatchObject({ detail: 'clips[1]: standard-fullhd clips last 4-15 whole seconds, got 16.', extra: { allowed_values: [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] } });
    expect(errors[2]!.detail).toBe('clips[2]: a clip with status error needs error_code (spec 2.9).');
    expect(errors[2]!.extra!.allowed_values).not.toContain('cancelled');
    expect(errors[4]!.detail).toBe('clips[4]: error_code goes with status error or cancelled, not done.');
  });

  it('uses the contract’s codes for a member alone: invalid_model, invalid_ratio, invalid_callback_url, an error_code outside 2.9', () => {
    const errors = errorsOf({
      clips: [
        { name: 'a', account: 'default', status: 'done', model: 'turbo' },
        { name: 'b', account: 'default', status: 'done', ratio: '2:1' },
        { name: 'c', account: 'default', status: 'pending', callback_url: 'ftp://x.test/' },
        { name: 'd', account: 'default', status: 'error', error_code: 'melted' },
        { name: 'e', account: 'default', status: 'done', duration: 31 },
        { name: 'f', account: 'default', status: 'finished' },
      ],
    });
    expect(errors.map(({ code, pointer }) => [code, pointer])).toEqual([
      ['invalid_model', '/clips/0/model'],
      ['invalid_ratio', '/clips/1/ratio'],
      ['invalid_callback_url', '/clips/2/callback_url'],
      ['invalid_parameter', '/clips/3/error_code'],
      ['invalid_duration', '/clips/4/duration'],
      ['invalid_parameter', '/clips/5/status'],
    ]);
    expect(errors[2]!.detail).toBe('callback_url must be https (or http for a local receiver).');
    expect(errors[3]!.extra!.allowed_values).toContain('upstream_auth_failed');
  });

  it('refuses a duplicate name, an account named "default", and image jobs that contradict spec 2.7 and 2.10', () => {
    const errors = errorsOf({
      accounts: [{ name: 'alice' }, { name: 'alice' }, { name: 'default' }],
      images: [
        { name: 'x', account: 'alice', status: 'failed' },
        { name: 'y', account: 'alice', status: 'done', error_code: 'busy' },
        { name: 'z', account: 'alice', status: 'partial' },
        { name: 'w', account: 'alice', status: 'done', type: 'character', count: 1 },
        { name: 'x', account: 'alice', status: 'done' },
      ],
    });
    expect(errors.map((error) => error.pointer)).toEqual(['/accounts/1/name', '/accounts/2/name', '/images/4/name', '/images/0/error_code', '/images/1/error_code', '/images/2/count', '/images/3/count']);
    expect(errors[0]!.detail).toBe('accounts[1].name "alice" is already the name of accounts[0].');
  });

  it('reports every error at once, one per member, with bounds on sizes', () => {
    const errors = errorsOf({ accounts: [{ name: '', balance: -3 }], clips: [{ name: 'c', account: 'nobody', status: 'done' }] });
    expect(errors.map(({ code, pointer }) => [code, pointer])).toEqual([['invalid_parameter', '/accounts/0/name'], ['invalid_parameter', '/accounts/0/balance'], ['invalid_parameter', '/clips/0/account']]);
    // 31 s breaks the member's bound and the standard model's range: one error for the member.
    expect(errorsOf({ clips: [{ name: 'c', account: 'default', status: 'done', duration: 31 }] })).toEqual([
      { code: 'invalid_duration', pointer: '/clips/0/duration', detail: 'clips[0].duration is whole seconds: 4-15 for standard models, 4-30 for cinema models.' },
    ]);
    const many = errorsOf({ accounts: Array.from({ length: SEED_LIMITS.accounts + 1 }, (_, i) => ({ name: `a${i}` })) });
    expect(many[0]).toMatchObject({ pointer: '/accounts', detail: `accounts holds at most ${SEED_LIMITS.accounts} accounts.` });
    expect(errorsOf({ clips: 'all of them' })[0]).toMatchObject({ pointer: '/clips', detail: 'clips is an array of clips.' });
  });

  it('takes at most 1,000 image jobs per fixture, so one seed request’s cost stays bounded (issue 29 item 6)', () => {
    expect(SEED_LIMITS.images).toBe(1_000);
    const image = (i: number) => ({ name: `i${i}`, account: 'default', status: 'done', count: 4 });
    expect(checkFixture({ images: Array.from({ length: 1_000 }, (_, i) => image(i)) }).ok).toBe(true);
    expect(errorsOf({ images: Array.from({ length: 1_001 }, (_, i) => image(i)) })[0]).toMatchObject({ code: 'invalid_parameter', pointer: '/images', detail: 'images holds at most 1000 image jobs.' });
  });

  it('checks a clip’s callback_url as POST /v1/videos does: https, plain http for a loopback host only, and under --strict no private or loopback host (issue 29 item 10)', () => {
    const clip = (callback_url: string, status = 'pending') => ({ name: callback_url, account: 'default', status, callback_url });
    const loose = ['https://example.com/hooks', 'http://127.0.0.1:3000/hooks', 'http://localhost/hooks', 'https://10.0.0.8/hooks'];
    expect(checkFixture({ clips: loose.map((url) => clip(url)) }).ok).toBe(true);
    expect(checkFixture({ clips: loose.map((url) => clip(url)) }, { strict: false }).ok).toBe(true);
    // Plain http to another host is refused by /v1 without --strict too.
    expect(errorsOf({ clips: [clip('https://example.com/a'), clip('http://example.com/hooks')] })).toEqual([
      { code: 'invalid_callback_url', pointer: '/clips/1/callback_url', detail: 'callback_url must be https; plain http is taken only for a loopback host (localhost, 127.0.0.1, [::1]).' },
    ]);
    const strict = (input: unknown) => {
      const check = checkFixture(input, { strict: true });
      if (check.ok) throw new Error('expected the fixture to be refused under --strict');
      return check.errors;
    };
    const refused = strict({ clips: [clip('https://example.com/hooks'), clip('http://127.0.0.1:3000/hooks'), clip('https://127.0.0.1/hooks', 'generating'), clip('https://[::1]/hooks'), clip('https://192.168.1.4/hooks'), clip('http://example.com/hooks', 'done')] });
    expect(refused.map(({ code, pointer }) => [code, pointer])).toEqual([1, 2, 3, 4, 5].map((i) => ['invalid_callback_url', `/clips/${i}/callback_url`]));
    expect(refused[0]!.detail).toBe('callback_url must use https, got http.');
    expect(refused[1]!.detail).toMatch(/^callback_url points to a loopback address/);
    expect(checkFixture({ clips: [clip('https://example.com/hooks')] }, { strict: true }).ok).toBe(true);
    // A member that already broke its own rule is reported once.
    expect(strict({ clips: [clip('ftp://x.test/')] })).toHaveLength(1);
  });

  it('calls a body that is not a JSON object invalid_json, pointing at the whole fixture', () => {
    for (const input of [null, [], 'fixture', 3]) expect(errorsOf(input)).toEqual([{ code: 'invalid_json', pointer: '', detail: 'A seed fixture is a JSON object: { "accounts", "assets", "clips", "images" }.' }]);
  });
});

describe('fixtureError and pointerRefusal: the 400 with `pointer`', () => {
  it('answers the first error with its pointer and lists up to 20', () => {
    const errors = errorsOf({ clips: Array.from({ length: 30 }, (_, i) => ({ name: `c${i}`, account: 'nobody', status: 'done' })) });
    const error = fixtureError(errors);
    expect(error).toMatchObject({ code: 'invalid_parameter', detail: 'clips[0].account "nobody" is not an account of the fixture (nor "default").', extra: { pointer: '/clips/0/account', parameter: 'clips[0].account' } });
    expect(error.extra!.errors).toHaveLength(MAX_LISTED_ERRORS);
    expect((error.extra!.errors as SeedError[])[19]).toEqual({ code: 'invalid_parameter', detail: 'clips[19].account "nobody" is not an account of the fixture (nor "default").', pointer: '/clips/19/account' });
    expect(() => fixtureError([])).toThrow(TypeError);
  });

  it('pointerRefusal adds the pointer to the contract’s refusal, for any route with pointer: true', () => {
    const body = { clips: [{ name: 'c', account: 'default', status: 'done', duration: 40 }] };
    const parsed = SeedFixture.safeParse(body, { reportInput: true });
    expect(pointerRefusal(SeedFixture, parsed.error!.issues, body)).toMatchObject({ code: 'invalid_duration', extra: { pointer: '/clips/0/duration' } });
    expect(jsonPointer(['clips', 0, 'a/b~c'])).toBe('/clips/0/a~1b~0c');
    expect(jsonPointer([])).toBe('');
  });
});

describe('planSeed: the steps that make a fixture', () => {
  it('makes accounts first, then assets, clips and image jobs, in the fixture’s order, with every default', () => {
    const check = checkFixture(FIXTURE);
    if (!check.ok) throw new Error('fixture refused');
    const steps = planSeed(check.fixture, { balance: 1000 });
    expect(steps.map((step) => `${step.kind}:${step.name}`)).toEqual([
      'account:alice', 'account:bob', 'asset:face', 'asset:bottle', 'clip:ready', 'clip:broken', 'clip:stopped', 'clip:queued', 'image:card', 'image:half', 'image:blocked', 'image:person',
    ]);
    expect(steps.slice(0, 4)).toEqual([
      { kind: 'account', name: 'alice', balance: 500 },
      { kind: 'account', name: 'bob', balance: 1000 },
      { kind: 'asset', name: 'face', account: { kind: 'fixture', name: 'alice' }, sample: 'photo' },
      { kind: 'asset', name: 'bottle', account: { kind: 'default' }, sample: 'product' },
    ]);
    expect(steps[4]).toEqual({ kind: 'clip', name: 'ready', account: { kind: 'fixture', name: 'alice' }, status: 'done', prompt: 'Seeded clip ready', model: 'cinema-hd', duration: 20, ratio: '16:9', errorCode: null, callbackUrl: null });
    expect(steps[5]).toMatchObject({ status: 'error', errorCode: 'upstream_timeout', prompt: 'a fox', model: 'standard', duration: 5 });
    expect(steps[6]).toMatchObject({ status: 'cancelled', errorCode: 'cancelled', account: { kind: 'default' } });
    expect(steps[7]).toMatchObject({ status: 'pending', ratio: '9:16', callbackUrl: 'https://example.com/hooks' });
    expect(steps.slice(8).map((step) => (step.kind === 'image' ? [step.status, step.count, step.made, step.errorCode, step.quality] : null))).toEqual([
      ['done', 4, 4, null, 'hd'], ['partial', 4, 2, null, 'standard'], ['failed', 1, 0, 'prompt_blocked', 'standard'], ['done', 4, 4, null, 'standard'],
    ]);
  });

  it('refuses a bad default balance', () => {
    expect(() => planSeed({}, { balance: -1 })).toThrow('Expected `balance` to be a whole number of credits >= 0, got -1.');
  });
});
