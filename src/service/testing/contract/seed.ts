import { z } from 'zod';
import { VIDEO_ERROR_CODES } from '../../../protocol/events.js';
import { IMAGE_ERROR_CODES, IMAGE_JOB_STATUSES, IMAGE_QUALITIES, IMAGE_RATIOS, IMAGE_TYPES, MAX_DESCRIPTION } from '../../contract/images.js';
import { DEFAULT_DURATION, isVideoModel, MODEL_SPECS, type VideoModel } from '../../contract/pricing.js';
import { cross, rule } from '../../contract/problems.js';
import { MAX_ACCOUNT_NAME, TestBalance } from './test-helpers.js';
import { LIMITS } from '../../contract/limits.js';
import { DURATION_RANGES, MAX_CALLBACK_URL, MODEL_ALIASES, VIDEO_STATUSES, VideoFields } from '../../contract/videos.js';
import { parseUrl } from '../../../http/url.js';

// The seed fixture of POST /test_helpers/seed, `serve --seed file.json` and `startService({ seed })`
// is a known starting state, named so the test can find what was made. The rules that span
// entries (names, references, the spec's rules of a finished clip) are here, so every way in runs them;
// a refusal names its place with a JSON Pointer (testing/seed.ts).

/** The name by which a fixture entry names the configured first account. */
export const DEFAULT_ACCOUNT = 'default';
/**
 * The most entries of each kind one fixture holds. Image jobs are fewer: a done job's
 * pictures are made inside the request (each kind drawn once, the rest linked), ~1 s per 1,000 jobs.
 */
export const SEED_LIMITS = { accounts: 100, assets: 1000, clips: 10_000, images: 1000 } as const;
/** The built-in sample photos an asset can be made of. */
export const SAMPLE_PHOTOS = ['photo', 'product'] as const;

const name = (what: string) => rule(z.string().min(1).max(MAX_ACCOUNT_NAME), { code: 'invalid_parameter', detail: ({ where }) => `${where} is ${what}, 1-${MAX_ACCOUNT_NAME} characters.` });
const list = <T extends z.ZodType>(item: T, max: number, what: string) =>
  rule(z.array(item).max(max), { code: 'invalid_parameter', detail: ({ where, issue }) => (issue.code === 'too_big' ? `${where} holds at most ${max} ${what}.` : `${where} is an array of ${what}.`) }).optional();
const Owner = name(`"${DEFAULT_ACCOUNT}" or the name of an account of the fixture`).meta({ description: `The name of an account of the fixture, or "${DEFAULT_ACCOUNT}" for the configured first account.` });

/** An account the fixture makes, with its own key and webhook secret. */
export const SeedAccount = z.object({
  name: name('the account’s name, unique in the fixture'),
  balance: TestBalance.optional().meta({ description: 'Starting credits; default the service’s starting balance.' }),
});

/** A trusted asset made of a built-in sample photo. */
export const SeedAsset = z.object({
  name: name('the asset’s name, unique in the fixture'),
  account: Owner,
  sample: rule(z.enum(SAMPLE_PHOTOS), { code: 'invalid_parameter', allowed: SAMPLE_PHOTOS }).optional().meta({ description: 'Which built-in photo (default photo); the asset is trusted at once.' }),
});

/** An absolute http(s) URL without credentials; the service's own policy (`--strict`: https, public hosts) is applied when the clip is made. */
function callbackProblem(url: string): string | null {
  const parsed = parseUrl(url);
  if (!parsed) return 'callback_url must be an absolute URL.';
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'callback_url must be https (or http for a local receiver).';
  return parsed.username || parsed.password ? 'callback_url must not carry credentials.' : null;
}

/** A clip in any state; a done one has working signed links, an error one with a retryable code can be retried. */
export const SeedClip = z.object({
  name: name('the clip’s name, unique in the fixture'),
  account: Owner,
  status: rule(z.enum(VIDEO_STATUSES), { code: 'invalid_parameter', allowed: VIDEO_STATUSES }),
  prompt: VideoFields.shape.prompt,
  error_code: rule(z.enum(VIDEO_ERROR_CODES as [string, ...string[]]), { code: 'invalid_parameter', allowed: VIDEO_ERROR_CODES })
    .optional().meta({ description: 'Spec 2.9: required with status error; cancelled goes with status cancelled.' }),
  model: VideoFields.shape.model,
  duration: rule(z.int().min(LIMITS.clipSeconds.min).max(LIMITS.clipSeconds.maxCinema), { code: 'invalid_duration', detail: ({ where }) => `${where} is whole seconds: ${DURATION_RANGES}.` })
    .optional().meta({ description: `Whole seconds within the model's range (spec 4.1); default ${DEFAULT_DURATION}.` }),
  ratio: VideoFields.shape.ratio,
  callback_url: rule(
    z.string().max(MAX_CALLBACK_URL).superRefine((url, ctx) => {
      const problem = callbackProblem(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    { code: 'invalid_callback_url', detail: ({ issue }) => (issue.code === 'custom' ? issue.message : `callback_url is a URL of at most ${MAX_CALLBACK_URL} characters.`) },
  ).optional().meta({ format: 'uri', description: 'A clip that is still to end sends its webhook here.' }),
});

/** An image job in any state. */
export const SeedImage = z.object({
  name: name('the image job’s name, unique in the fixture'),
  account: Owner,
  status: rule(z.enum(IMAGE_JOB_STATUSES), { code: 'invalid_parameter', allowed: IMAGE_JOB_STATUSES }),
  description: rule(z.string().max(MAX_DESCRIPTION), { code: 'invalid_parameter' }).optional(),
  type: rule(z.enum(IMAGE_TYPES), { code: 'invalid_parameter', allowed: IMAGE_TYPES }).optional(),
  quality: rule(z.enum(IMAGE_QUALITIES), { code: 'invalid_parameter', allowed: IMAGE_QUALITIES }).optional(),
  aspect_ratio: rule(z.enum(IMAGE_RATIOS), { code: 'invalid_ratio', allowed: IMAGE_RATIOS }).optional(),
  count: rule(z.literal([1, 4]), { code: 'invalid_parameter', allowed: [1, 4] }).optional(),
  error_code: rule(z.enum(IMAGE_ERROR_CODES), { code: 'invalid_parameter', allowed: IMAGE_ERROR_CODES }).optional().meta({ description: 'Spec 2.10: required with status failed.' }),
});

/** A fixture as a test writes it. */
export type SeedFixtureInput = z.input<typeof SeedFixture>;
/** A fixture once checked: what `planSeed` takes. */
export type SeedFixtureValue = z.output<typeof SeedFixture>;
type Issues = z.core.$RefinementCtx;

/** The current id of a model as sent (an earlier version's id is still accepted, spec 9). */
export function seedModel(model: string | null | undefined): VideoModel {
  if (model == null) return 'standard';
  return isVideoModel(model) ? model : (MODEL_ALIASES[model] ?? 'standard');
}

/** Names unique per kind, and `default` reserved for the configured first account. */
function names(fixture: SeedFixtureValue, ctx: Issues): void {
  for (const kind of ['accounts', 'assets', 'clips', 'images'] as const) {
    const seen = new Map<string, number>();
    for (const [index, entry] of (fixture[kind] ?? []).entries()) {
      const first = seen.get(entry.name);
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: [kind, index, 'name'], message: `${kind}[${index}].name "${entry.name}" is already the name of ${kind}[${first}].`, params: cross('invalid_parameter', { parameter: `${kind}[${index}].name` }) });
      else seen.set(entry.name, index);
      if (kind === 'accounts' && entry.name === DEFAULT_ACCOUNT) {
        ctx.addIssue({ code: 'custom', path: [kind, index, 'name'], message: `"${DEFAULT_ACCOUNT}" names the configured first account; give this account another name.`, params: cross('invalid_parameter', { parameter: `accounts[${index}].name` }) });
      }
    }
  }
}

/** Every `account` of an asset, clip or image names an account of the fixture, or `default`. */
function references(fixture: SeedFixtureValue, ctx: Issues): void {
  const known = [DEFAULT_ACCOUNT, ...(fixture.accounts ?? []).map((account) => account.name)];
  for (const kind of ['assets', 'clips', 'images'] as const) {
    for (const [index, entry] of (fixture[kind] ?? []).entries()) {
      if (known.includes(entry.account)) continue;
      ctx.addIssue({ code: 'custom', path: [kind, index, 'account'], message: `${kind}[${index}].account "${entry.account}" is not an account of the fixture (nor "${DEFAULT_ACCOUNT}").`, params: cross('invalid_parameter', { parameter: `${kind}[${index}].account`, allowed_values: known }) });
    }
  }
}

/** Spec 2.9, 3.1 and 4.1 for a clip in any state: its duration within its model's, and an error_code only where the status has one. */
function clips(fixture: SeedFixtureValue, ctx: Issues): void {
  for (const [index, clip] of (fixture.clips ?? []).entries()) {
    const at = (member: string): PropertyKey[] => ['clips', index, member];
    const model = seedModel(clip.model);
    const { minDuration, maxDuration } = MODEL_SPECS[model];
    const duration = clip.duration ?? DEFAULT_DURATION;
    if (duration < minDuration || duration > maxDuration) {
      const allowed = Array.from({ length: maxDuration - minDuration + 1 }, (_, i) => minDuration + i);
      ctx.addIssue({ code: 'custom', path: at('duration'), message: `clips[${index}]: ${model} clips last ${minDuration}-${maxDuration} whole seconds, got ${duration}.`, params: cross('invalid_duration', { allowed_values: allowed }) });
    }
    const refuse = (message: string, allowed?: readonly string[]) => ctx.addIssue({ code: 'custom', path: at('error_code'), message: `clips[${index}]: ${message}`, params: cross('invalid_parameter', { parameter: `clips[${index}].error_code`, ...(allowed ? { allowed_values: allowed } : {}) }) });
    const failures = VIDEO_ERROR_CODES.filter((code) => code !== 'cancelled');
    if (clip.status === 'error') {
      if (clip.error_code === undefined) refuse('a clip with status error needs error_code (spec 2.9).', failures);
      else if (clip.error_code === 'cancelled') refuse('error_code cancelled goes with status cancelled.', failures);
    } else if (clip.status === 'cancelled') {
      if (clip.error_code !== undefined && clip.error_code !== 'cancelled') refuse('a cancelled clip’s error_code is cancelled.', ['cancelled']);
    } else if (clip.error_code !== undefined) refuse(`error_code goes with status error or cancelled, not ${clip.status}.`);
  }
}

/** Spec 2.7, 2.10 and 3.3: an error_code only on a failed job (and required there), partial only when 4 were asked, a character is 4 photos. */
function images(fixture: SeedFixtureValue, ctx: Issues): void {
  for (const [index, image] of (fixture.images ?? []).entries()) {
    const issue = (member: string, message: string, allowed?: readonly unknown[]) =>
      ctx.addIssue({ code: 'custom', path: ['images', index, member], message: `images[${index}]: ${message}`, params: cross('invalid_parameter', { parameter: `images[${index}].${member}`, ...(allowed ? { allowed_values: allowed } : {}) }) });
    if (image.status === 'failed' && image.error_code === undefined) issue('error_code', 'a failed job needs error_code (spec 2.10).', IMAGE_ERROR_CODES);
    if (image.status !== 'failed' && image.error_code !== undefined) issue('error_code', `error_code goes with status failed, not ${image.status}.`);
    const character = image.type === 'character';
    if (character && image.count === 1) issue('count', 'an AI character is 4 photos (spec 2.13): count is 4 or absent.', [4]);
    else if (image.status === 'partial' && !character && image.count !== 4) issue('count', 'a partial job made some of 4 images: count is 4.', [4]);
  }
}

/** POST /test_helpers/seed: accounts, assets, clips and image jobs, each with a name the answer maps to its id. */
export const SeedFixture = z
  .object({
    accounts: list(SeedAccount, SEED_LIMITS.accounts, 'accounts'),
    assets: list(SeedAsset, SEED_LIMITS.assets, 'assets'),
    clips: list(SeedClip, SEED_LIMITS.clips, 'clips'),
    images: list(SeedImage, SEED_LIMITS.images, 'image jobs'),
  })
  .superRefine((fixture, ctx) => {
    names(fixture, ctx);
    references(fixture, ctx);
    clips(fixture, ctx);
    images(fixture, ctx);
  })
  .meta({ id: 'SeedFixture', description: 'What to make. A refusal carries `pointer`, the JSON Pointer (RFC 6901) of the member at fault; nothing is made.' });

const Ids = z.record(z.string(), z.int());
/** 201 of POST /test_helpers/seed. */
export const SeedResult = z
  .object({
    accounts: z.record(z.string(), z.object({ id: z.int(), api_key: z.string(), webhook_secret: z.string() })),
    assets: Ids,
    clips: Ids,
    images: Ids,
  })
  .meta({ id: 'SeedResult', description: 'The id of every entry made, by its name in the fixture.' });
