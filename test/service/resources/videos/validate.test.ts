import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEmitter } from '../../../../src/emitter/index.js';
import { MAX_IMAGE_URL } from '../../../../src/service/contract/common.js';
import { clipPrice } from '../../../../src/service/contract/pricing.js';
import { MAX_PROMPT, MODEL_ALIASES, VideoRequest, type VideoCommand } from '../../../../src/service/contract/videos.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { Service } from '../../../../src/service/service.js';
import { callerOf, serviceClient, type ServiceClient } from '../../../helpers/service-client.js';

// The rules of a clip request (spec 4.1), declared once in the contract (issue 21): what a body is accepted
// as is the command the contract makes of it (`VideoRequest`, then the clip commands' `command`, which adds
// the key's default assets and the callback URL's check); what it is refused with is read where a client
// reads it, from POST /v1/videos.

const services: Service[] = [];
const clients: ServiceClient[] = [];
let local: Service;
let client: ServiceClient;
let strictClient: ServiceClient;

async function open(strict: boolean): Promise<{ service: Service; client: ServiceClient }> {
  const emitter = { send: async () => undefined, stop: async () => undefined } as unknown as WebhookEmitter;
  // A refusal is the point here: a body accepted by mistake is made (202) and fails the test, never a 5xx for an image.
  const service = await Service.open({ file: false, strict, clock: new SimulatedClock({ frozen: true }), emitter, balance: 1_000_000, rateLimitPerMinute: 10_000, fetchImage: async () => ({ ok: true }) });
  services.push(service);
  const opened = await serviceClient(service);
  clients.push(opened);
  return { service, client: opened };
}

beforeAll(async () => {
  ({ service: local, client } = await open(false));
  ({ client: strictClient } = await open(true));
});
afterAll(async () => {
  for (const opened of clients.splice(0)) await opened.close();
  for (const service of services.splice(0)) await service.close();
});

/** The command an accepted body makes, for a key with `defaultAssetIds`. */
function ok(body: unknown, { defaultAssetIds = [] }: { defaultAssetIds?: number[] } = {}): VideoCommand {
  const parsed = VideoRequest.safeParse(body);
  if (!parsed.success) throw new Error(`refused: ${parsed.error.message}`);
  const caller = callerOf(local);
  return local.videos.command({ ...caller, key: { ...caller.key, defaultAssetIds } }, parsed.data);
}

/** The problem POST `path` answers for `body` (sent as JSON, whatever it is), with the answer's status. */
async function refusedAt(path: string, body: unknown, { strict = false }: { strict?: boolean } = {}): Promise<Record<string, any>> {
  const answer = await (strict ? strictClient : client).post(path, JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
  if (answer.status < 400) throw new Error(`accepted: ${answer.status}`);
  return { ...answer.body, status: answer.status };
}

const refused = (body: unknown, options: { strict?: boolean } = {}) => refusedAt('/videos', body, options);
const STRICT = { strict: true };

describe('POST /videos body (spec 4.1), field by field', () => {
  it('applies the defaults: 5 s, 16:9, standard at 480p, no images', () => {
    expect(ok({ prompt: 'a fox in the snow' })).toMatchObject({
      prompt: 'a fox in the snow', duration: 5, ratio: '16:9', model: 'standard', resolution: '480p',
      imageUrls: [], assetIds: null, assetSource: 'none', subjectConsent: null, callbackUrl: null, warnings: [],
    });
  });

  it('prompt: required unless image_urls, asset_ids or key default assets; a string', async () => {
    expect(await refused({})).toMatchObject({ status: 400, code: 'missing_input' });
    expect(await refused({ prompt: '   ' })).toMatchObject({ status: 400, code: 'missing_input' });
    // Issue 21: well-formed JSON that breaks a member's rule answers the documented code of its kind, not invalid_json.
    expect(await refused({ prompt: 42 })).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'prompt' });
    expect(ok({ asset_ids: [3] }).assetSource).toBe('asset_ids');
    expect(ok({ image_urls: ['https://example.com/a.jpg'], subject_consent: 'self' }).assetSource).toBe('image_urls');
    expect(ok({}, { defaultAssetIds: [7] }).assetSource).toBe('default_asset_ids');
  });

  it('duration: whole seconds, 4-15 for standard models, 4-30 for cinema models, listing the allowed values', async () => {
    expect(ok({ prompt: 'x', duration: 4 }).duration).toBe(4);
    expect(ok({ prompt: 'x', duration: 15, model: 'standard-fullhd' }).duration).toBe(15);
    expect(ok({ prompt: 'x', duration: 30, model: 'cinema' }).duration).toBe(30);
    for (const body of [{ duration: 3 }, { duration: 16 }, { duration: 31, model: 'cinema-hd' }, { duration: 5.5 }, { duration: '5' }, { duration: 0 }]) {
      expect(await refused({ prompt: 'x', ...body })).toMatchObject({ status: 400, code: 'invalid_duration' });
    }
    expect((await refused({ prompt: 'x', duration: 16 })).allowed_values).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
  });

  it('ratio and its alias aspect_ratio: the six values; both must agree', async () => {
    for (const ratio of ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9']) {
      expect(ok({ prompt: 'x', ratio }).ratio).toBe(ratio);
      expect(ok({ prompt: 'x', aspect_ratio: ratio }).ratio).toBe(ratio);
    }
    expect(await refused({ prompt: 'x', ratio: '2:1' })).toMatchObject({ status: 400, code: 'invalid_ratio', allowed_values: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] });
    expect(await refused({ prompt: 'x', aspect_ratio: 'square' })).toMatchObject({ code: 'invalid_ratio' });
    expect(await refused({ prompt: 'x', ratio: '1:1', aspect_ratio: '9:16' })).toMatchObject({ code: 'invalid_ratio' });
    expect(ok({ prompt: 'x', ratio: '1:1', aspect_ratio: '1:1' }).ratio).toBe('1:1');
  });

  it('model: the six ids, and the ids of earlier versions answered with the current id', async () => {
    for (const model of ['standard', 'standard-hd', 'standard-fullhd', 'cinema', 'cinema-hd', 'cinema-fullhd']) expect(ok({ prompt: 'x', model }).model).toBe(model);
    for (const [alias, current] of Object.entries(MODEL_ALIASES)) {
      const command = ok({ prompt: 'x', model: alias });
      expect(command.model).toBe(current);
      expect(command.warnings.map((w) => w.code)).toEqual(['model_id_deprecated']);
    }
    expect(ok({ prompt: 'x', model: 'cinema' }).warnings).toEqual([]);
    expect(await refused({ prompt: 'x', model: 'ultra' })).toMatchObject({ status: 400, code: 'invalid_model' });
    expect(await refused({ prompt: 'x', model: 7 })).toMatchObject({ status: 400, code: 'invalid_model' });
  });

  it('resolution: 480p, 720p or 1080p, and it must match the model tier', async () => {
    expect(ok({ prompt: 'x', model: 'cinema-hd', resolution: '720p' }).resolution).toBe('720p');
    expect(await refused({ prompt: 'x', resolution: '4k' })).toMatchObject({ status: 400, code: 'invalid_resolution' });
    const mismatch = await refused({ prompt: 'x', model: 'cinema', resolution: '1080p' });
    expect(mismatch).toMatchObject({ status: 400, code: 'resolution_model_mismatch' });
    expect(mismatch.detail).toContain('cinema-fullhd');
  });

  it(`prompt: at most ${2000} characters as sent (issue 20 item 11), also in a batch item and its defaults`, async () => {
    expect(MAX_PROMPT).toBe(2000);
    expect(ok({ prompt: 'x'.repeat(2000) }).prompt).toHaveLength(2000);
    // Issue 21: a member past its bound answers invalid_parameter naming it (no longer invalid_json); the sentence is the same.
    expect(await refused({ prompt: 'x'.repeat(2001) })).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'prompt', detail: 'prompt is 2001 characters; the limit is 2000.' });
    // Counted as sent, whitespace included: the prompt is kept and listed as it was sent.
    expect(await refused({ prompt: `a fox${' '.repeat(900 * 1024)}` })).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'prompt' });
    expect(await refusedAt('/videos/batch', { items: [{ prompt: 'a' }, { prompt: 'b'.repeat(2001) }] })).toMatchObject({ status: 400, code: 'invalid_parameter', item_index: 1 });
    // The defaults are checked once, as the fields they are (issue 21): the refusal names defaults.prompt.
    expect(await refusedAt('/videos/batch', { defaults: { prompt: 'c'.repeat(2001) }, items: [{ duration: 5 }] })).toMatchObject({ status: 400, code: 'invalid_parameter', parameter: 'defaults.prompt' });
  });

  it('image_urls: at most 5 public http(s) URLs or asset:// URIs, with subject_consent', async () => {
    const five = Array.from({ length: 5 }, (_, i) => `https://example.com/${i}.jpg`);
    expect(ok({ image_urls: five, subject_consent: 'no_real_person' }).imageUrls).toEqual(five);
    expect(await refused({ image_urls: [...five, 'https://example.com/6.jpg'], subject_consent: 'self' })).toMatchObject({ status: 400, code: 'too_many_images' });
    for (const url of ['ftp://example.com/a.jpg', 'not a url', 'https://user:pw@example.com/a.jpg', 'asset://abc', 'asset://0', 'javascript:alert(1)']) {
      expect(await refused({ image_urls: [url], subject_consent: 'self' })).toMatchObject({ status: 400, code: 'invalid_image_url' });
    }
    expect(await refused({ image_urls: [5], subject_consent: 'self' })).toMatchObject({ code: 'invalid_image_url' });
    expect(ok({ image_urls: ['asset://12', 'https://example.com/a.png'], subject_consent: 'self' }).assetUris).toEqual([12]);
    expect(await refused({ image_urls: ['https://example.com/a.jpg'] })).toMatchObject({ status: 422, code: 'consent_required' });
    // Each URL at most 2048 characters, as callback_url (issue 20 item 11: nothing a client sends is kept unbounded).
    const long = `https://example.com/${'a'.repeat(MAX_IMAGE_URL - 20)}`;
    expect(long).toHaveLength(2048);
    expect(ok({ image_urls: [long], subject_consent: 'self' }).imageUrls).toEqual([long]);
    expect(await refused({ image_urls: [`${long}b`], subject_consent: 'self' })).toMatchObject({ status: 400, code: 'invalid_image_url', detail: 'image_urls[0]: longer than 2048 characters.' });
    expect(await refused({ image_url: `${long}b`, subject_consent: 'self' })).toMatchObject({ status: 400, code: 'invalid_image_url' });
  });

  it('image_url: the deprecated single form, folded into image_urls with a warning', async () => {
    const command = ok({ image_url: 'https://example.com/a.jpg', subject_consent: 'self' });
    expect(command.imageUrls).toEqual(['https://example.com/a.jpg']);
    expect(command.warnings.map((w) => w.code)).toEqual(['image_url_deprecated']);
    const five = Array.from({ length: 5 }, (_, i) => `https://example.com/${i}.jpg`);
    expect(await refused({ image_urls: five, image_url: 'https://example.com/x.jpg', subject_consent: 'self' })).toMatchObject({ code: 'too_many_images' });
  });

  it('subject_consent: self, permission, no_real_person, and third_party_with_permission as permission', async () => {
    const urls = ['https://example.com/a.jpg'];
    for (const consent of ['self', 'permission', 'no_real_person']) expect(ok({ image_urls: urls, subject_consent: consent }).subjectConsent).toBe(consent);
    expect(ok({ image_urls: urls, subject_consent: 'third_party_with_permission' }).subjectConsent).toBe('permission');
    expect(await refused({ image_urls: urls, subject_consent: 'everyone' })).toMatchObject({ status: 400, code: 'invalid_subject_consent' });
  });

  it('asset_ids: at most 5 positive integers, taking priority over image_urls, with a warning without consent', async () => {
    const command = ok({ asset_ids: [1, 2], image_urls: ['https://example.com/a.jpg'], subject_consent: 'self' });
    expect(command.assetSource).toBe('asset_ids');
    expect(command.warnings).toEqual([]);
    expect(ok({ asset_ids: [1] }).warnings.map((w) => w.code)).toEqual(['subject_consent_missing']);
    expect(await refused({ asset_ids: [1, 2, 3, 4, 5, 6] })).toMatchObject({ status: 400, code: 'too_many_images' });
    for (const ids of [[0], [1.5], ['1'], 'abc']) expect(await refused({ asset_ids: ids })).toMatchObject({ status: 400, code: 'invalid_asset_id' });
  });

  it('callback_url: https, at most 2048 characters; http for loopback hosts outside --strict', async () => {
    expect(ok({ prompt: 'x', callback_url: 'https://example.com/hooks' }).callbackUrl).toBe('https://example.com/hooks');
    expect(ok({ prompt: 'x', callback_url: 'http://127.0.0.1:3000/hooks' })).toMatchObject({ callbackUrl: 'http://127.0.0.1:3000/hooks', warnings: [{ code: 'callback_url_not_https' }] });
    expect(ok({ prompt: 'x', callback_url: 'https://example.com/hooks' }).warnings).toEqual([]);
    expect(ok({ prompt: 'x', callback_url: 'http://localhost:3000/hooks' }).callbackUrl).toBe('http://localhost:3000/hooks');
    expect(await refused({ prompt: 'x', callback_url: 'http://example.com/hooks' })).toMatchObject({ status: 400, code: 'invalid_callback_url' });
    expect(await refused({ prompt: 'x', callback_url: 'http://127.0.0.1:3000/hooks' }, STRICT)).toMatchObject({ code: 'invalid_callback_url' });
    expect(await refused({ prompt: 'x', callback_url: 'https://10.0.0.1/hooks' }, STRICT)).toMatchObject({ code: 'invalid_callback_url' });
    expect(await refused({ prompt: 'x', callback_url: `https://example.com/${'a'.repeat(2048)}` })).toMatchObject({ code: 'invalid_callback_url' });
    expect(await refused({ prompt: 'x', callback_url: 'not a url' })).toMatchObject({ code: 'invalid_callback_url' });
    const detail = (await refused({ prompt: 'x', callback_url: 'https://10.0.0.1/hooks' }, STRICT)).detail;
    expect(detail).not.toContain('allowPrivateNetworks');
  });

  it('takes null as absent, ignores unknown members, and refuses a body that is not an object', async () => {
    expect(ok({ prompt: 'x', duration: null, callback_url: null, extra: true }).duration).toBe(5);
    for (const body of [null, [], 'x', 3]) expect(await refused(body)).toMatchObject({ status: 400, code: 'invalid_json' });
  });

  it('prices what it accepts with the table (spec 2.13)', () => {
    const command = ok({ prompt: 'x', model: 'cinema-720p', duration: 10 });
    expect(clipPrice(command.model, command.duration)).toBe(54);
  });
});
