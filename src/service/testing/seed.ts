import type { ImageErrorCode, ImageRatio } from '../contract/images.js';
import { DEFAULT_DURATION, type VideoModel } from '../contract/pricing.js';
import { refusalOf, ServiceError } from '../contract/problems.js';
import { DEFAULT_ACCOUNT, SeedFixture, seedModel, type SeedFixtureValue } from './contract/seed.js';
import type { Ratio, VideoStatus } from '../contract/videos.js';
import type { VideoErrorCode } from '../../protocol/events.js';
import type { ProblemCode } from '../../protocol/problem.js';
import { checkClipCallback } from '../core/callback-url.js';
import { jsonPointer } from '../contract/pointer.js';

// Seeding: the fixture is checked whole before anything is made (every error, each with its
// JSON Pointer), then turned into an ordered list of steps that the service's wiring executes. Nothing
// here creates anything: a fixture that fails makes nothing.

/** One thing wrong with a fixture. */
export interface SeedError {
  code: ProblemCode;
  detail: string;
  /** The JSON Pointer (RFC 6901) of the member at fault: `/clips/3/duration`; `''` for the whole fixture. */
  pointer: string;
  /** The refusal's other members (`allowed_values`, `parameter`). */
  extra?: Record<string, unknown>;
}

/** A checked fixture, or every error of it (one per member). */
export type FixtureCheck = { ok: true; fixture: SeedFixtureValue } | { ok: false; errors: SeedError[] };

/** The most errors a refusal lists (`errors`), so a fixture of 10,000 bad clips does not make a 10,000-entry answer. */
export const MAX_LISTED_ERRORS = 20;

/**
 * Checks a fixture against the contract (contract/seed.ts): every member's rule, then the rules across
 * entries (unique names, references to accounts, a clip's duration within its model's, error codes of
 * spec 2.9 and 2.10 where the status has one). A fixture that is not a JSON object is `invalid_json`.
 * @example checkFixture({ clips: [{ name: 'a', account: 'nobody', status: 'done' }] }) // { ok: false, errors: [{ code: 'invalid_parameter', pointer: '/clips/0/account', … }] }
 */
export function checkFixture(input: unknown, { strict = false }: FixtureCheckOptions = {}): FixtureCheck {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, errors: [{ code: 'invalid_json', detail: 'A seed fixture is a JSON object: { "accounts", "assets", "clips", "images" }.', pointer: '' }] };
  }
  const parsed = SeedFixture.safeParse(input, { reportInput: true });
  // The rules across entries run too when the members only break a bound, so a member can fail twice
  // (a duration of 31 for a standard clip): one error per member, the first.
  const errors = new Map<string, SeedError>();
  for (const issue of parsed.success ? [] : parsed.error.issues) {
    const pointer = jsonPointer(issue.path);
    if (errors.has(pointer)) continue;
    const refusal = refusalOf(SeedFixture, [issue], input);
    errors.set(pointer, { code: refusal.code, detail: refusal.detail, pointer, ...(refusal.extra ? { extra: refusal.extra } : {}) });
  }
  callbacks((input as { clips?: unknown }).clips, strict, errors);
  if (parsed.success && errors.size === 0) return { ok: true, fixture: parsed.data };
  return { ok: false, errors: [...errors.values()] };
}

/** How the service that makes a fixture checks it. */
export interface FixtureCheckOptions {
  /** `--strict`: a clip's `callback_url` is https to a public host, as `POST /v1/videos` then requires. @default false */
  strict?: boolean;
}

/**
 * Each clip's `callback_url` by the rule of `POST /v1/videos` (core/callback-url.ts), so
 * `--strict` refuses a loopback or plain-http one here too; a member that already failed is not told twice.
 */
function callbacks(clips: unknown, strict: boolean, errors: Map<string, SeedError>): void {
  if (!Array.isArray(clips)) return;
  for (const [index, clip] of clips.entries()) {
    const url = (clip as { callback_url?: unknown } | null)?.callback_url;
    const pointer = jsonPointer(['clips', index, 'callback_url']);
    if (typeof url !== 'string' || errors.has(pointer)) continue;
    try {
      checkClipCallback(url, { strict });
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      errors.set(pointer, { code: error.code, detail: error.detail, pointer });
    }
  }
}

/**
 * The refusal of a fixture: the first error's code and sentence, with `pointer`, and `errors` listing up
 * to `MAX_LISTED_ERRORS` of them (each `{ code, detail, pointer }`), so one round trip fixes a file.
 * @example throw fixtureError(check.errors) // 400 invalid_parameter { pointer: '/clips/0/account', errors: [...] }
 */
export function fixtureError(errors: readonly SeedError[]): ServiceError {
  const [first] = errors;
  if (!first) throw new TypeError('Expected at least one seed error.');
  const listed = errors.slice(0, MAX_LISTED_ERRORS).map(({ code, detail, pointer }) => ({ code, detail, pointer }));
  return new ServiceError(first.code, first.detail, { extra: { ...first.extra, pointer: first.pointer, errors: listed } });
}

/** Whose an entry is: the configured first account, or an account the fixture makes (by name). */
export type SeedOwner = { kind: 'default' } | { kind: 'fixture'; name: string };

/** Make an account with its own key and webhook secret. */
export interface AccountStep {
  kind: 'account';
  name: string;
  balance: number;
}
/** Make a trusted asset of a built-in sample photo. */
export interface AssetStep {
  kind: 'asset';
  name: string;
  account: SeedOwner;
  sample: 'photo' | 'product';
}
/** Make a clip in its status. Seeding charges nothing: an account has the balance the fixture gives it. */
export interface ClipStep {
  kind: 'clip';
  name: string;
  account: SeedOwner;
  status: VideoStatus;
  prompt: string;
  model: VideoModel;
  duration: number;
  ratio: Ratio;
  /** Spec 2.9: set for `error` (as given) and `cancelled` (`cancelled`), else null. */
  errorCode: VideoErrorCode | null;
  callbackUrl: string | null;
}
/** Make an image job in its status (charging nothing, as for clips). */
export interface ImageStep {
  kind: 'image';
  name: string;
  account: SeedOwner;
  status: 'generating' | 'done' | 'partial' | 'failed';
  description: string;
  type: 'image' | 'character';
  quality: 'standard' | 'hd';
  aspectRatio: ImageRatio;
  count: 1 | 4;
  /** Images made: all of them when done, 2 of 4 when partial, none when failed or still generating. */
  made: number;
  errorCode: ImageErrorCode | null;
}
/** One step of a seed plan. */
export type SeedStep = AccountStep | AssetStep | ClipStep | ImageStep;

/** What `planSeed` needs of the service. */
export interface SeedPlanOptions {
  /** The starting balance of an account that gives none: the service's configured one. */
  balance: number;
}

/**
 * The steps that make a checked fixture, in an order that never refers forward: accounts, then assets,
 * clips and image jobs, each kind in the fixture's order, with every default filled in. The wiring runs
 * them as one unit (all or nothing) and maps each name to the id it made.
 * @example planSeed(check.fixture, { balance: 1000 }) // [{ kind: 'account', name: 'alice', balance: 1000 }, { kind: 'clip', … }]
 */
export function planSeed(fixture: SeedFixtureValue, { balance }: SeedPlanOptions): SeedStep[] {
  if (!Number.isSafeInteger(balance) || balance < 0) throw new TypeError(`Expected \`balance\` to be a whole number of credits >= 0, got ${balance}.`);
  const owner = (name: string): SeedOwner => (name === DEFAULT_ACCOUNT ? { kind: 'default' } : { kind: 'fixture', name });
  const steps: SeedStep[] = [];
  for (const account of fixture.accounts ?? []) steps.push({ kind: 'account', name: account.name, balance: account.balance ?? balance });
  for (const asset of fixture.assets ?? []) steps.push({ kind: 'asset', name: asset.name, account: owner(asset.account), sample: asset.sample ?? 'photo' });
  for (const clip of fixture.clips ?? []) {
    const errorCode = clip.status === 'cancelled' ? 'cancelled' : clip.status === 'error' ? (clip.error_code as VideoErrorCode) : null;
    steps.push({
      kind: 'clip', name: clip.name, account: owner(clip.account), status: clip.status, prompt: clip.prompt ?? `Seeded clip ${clip.name}`, model: seedModel(clip.model),
      duration: clip.duration ?? DEFAULT_DURATION, ratio: clip.ratio ?? '16:9', errorCode, callbackUrl: clip.callback_url ?? null,
    });
  }
  for (const image of fixture.images ?? []) {
    const type = image.type ?? 'image';
    const count = type === 'character' ? 4 : (image.count ?? 1);
    const made = image.status === 'done' ? count : image.status === 'partial' ? 2 : 0;
    steps.push({
      kind: 'image', name: image.name, account: owner(image.account), status: image.status, description: image.description ?? `Seeded image ${image.name}`, type,
      quality: image.quality ?? 'standard', aspectRatio: image.aspect_ratio ?? '1:1', count, made, errorCode: image.status === 'failed' ? (image.error_code ?? null) : null,
    });
  }
  return steps;
}
