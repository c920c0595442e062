import { z } from 'zod';
import { USER_ACTION_KINDS } from '../../protocol/problem.js';
import { LIMITS } from './limits.js';
import { rule } from './problems.js';
import { parseUrl } from '../../http/url.js';

// The pieces every part of the contract shares: ids in paths, integers in queries, consent values, the
// Idempotency-Key, timestamps and links, and the problem body of spec section 7.

/** Spec 5, consent rules; `third_party_with_permission` is the alias of `permission` kept by spec 9. */
export const SUBJECT_CONSENTS = ['self', 'permission', 'no_real_person'] as const;
export type SubjectConsent = (typeof SUBJECT_CONSENTS)[number];

/** `subject_consent` as a client sends it: the three values, or the legacy alias, answered as `permission`. */
export const SubjectConsentInput = rule(
  z.enum([...SUBJECT_CONSENTS, 'third_party_with_permission']).meta({
    description: 'self, permission or no_real_person. third_party_with_permission is the deprecated alias of permission (spec 9).',
  }),
  { code: 'invalid_subject_consent', allowed: SUBJECT_CONSENTS, detail: ({ where }) => `${where} is self, permission or no_real_person.` },
);

/** The consents from the strictest (another person's photo) to the least, for the one that counts among several (spec 2.7 `animate`). */
export const CONSENTS_STRICTEST_FIRST = ['permission', 'self', 'no_real_person'] as const satisfies readonly SubjectConsent[];

/** The canonical consent value of what was sent. */
export function canonicalConsent(value: (typeof SUBJECT_CONSENTS)[number] | 'third_party_with_permission'): SubjectConsent {
  return value === 'third_party_with_permission' ? 'permission' : value;
}

/**
 * The path id of a resource (spec 4.4, 4.10: integer >= 1). Anything else is the resource's 404, as an
 * unknown id is: a client cannot tell a malformed id from one that never existed.
 */
export function pathId(noun: string) {
  const rule404 = { code: 'not_found', detail: ({ value }: { value: unknown }) => `No ${noun} ${String(value)}.` } as const;
  return rule(rule(z.string().regex(/^[1-9]\d{0,15}$/), rule404).transform(Number).pipe(z.int().min(1)), rule404).meta({ description: `The ${noun}'s id, an integer >= 1.` });
}

/**
 * An integer in a query string, 0-9 digits only (so `' 5 '`, `1e2`, `-0` and `''` are refused), within bounds
 * (`max` at most 2^53 - 1, its default); an absent parameter is its default. Described to OpenAPI by its output: `{ type: integer, minimum, maximum }`.
 * @example queryInteger('limit', { min: 1, max: 100, fallback: 20 })
 */
export function queryInteger(name: string, options: { min: number; max?: number; fallback: number; unit?: string }): z.ZodType<number, string | undefined>;
export function queryInteger(name: string, options: { min: number; max?: number; unit?: string }): z.ZodType<number | undefined, string | undefined>;
export function queryInteger(name: string, { min, max = Number.MAX_SAFE_INTEGER, fallback, unit = '' }: { min: number; max?: number; fallback?: number; unit?: string }): z.ZodType {
  // The bound is said in the detail and documented as `maximum`, so a refusal of 2^53 names the range it missed.
  const detail = () => `${name} is an integer from ${min} to ${max}${unit ? ` (${unit})` : ''}.`;
  const number = z.number().int().min(min).max(max);
  const digits = rule(z.string().regex(/^\d{1,16}$/), { code: 'invalid_parameter', detail });
  const parsed = rule(digits.transform(Number).pipe(rule(number, { code: 'invalid_parameter', detail })), { code: 'invalid_parameter', detail });
  // An empty `limit=` is no integer, refused as `limit=x` is: an empty value never reads as absent (an empty
  // `account=` taken as absent would clear every account's journal).
  return fallback === undefined ? parsed.optional() : parsed.default(fallback);
}

/** A query parameter that takes one of `values`. */
export function queryEnum<const T extends readonly [string, ...string[]]>(name: string, values: T) {
  return rule(z.enum(values), { code: 'invalid_parameter', allowed: values, detail: () => `${name} is one of ${values.join(', ')}.` }).optional();
}

/** Spec 4.1 and 7: the `Idempotency-Key` header, 1-255 printable ASCII characters (0x21-0x7E). */
// Built from LIMITS (a constant, never input), so the length is said once.
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^[\\x21-\\x7e]{1,${LIMITS.idempotencyKeyChars}}$`);
/** The header's rule in words, for details and descriptions. */
export const IDEMPOTENCY_KEY_RULE = `1-${LIMITS.idempotencyKeyChars} printable ASCII characters (0x21-0x7E)`;
export const IdempotencyKey = rule(
  z.string().regex(IDEMPOTENCY_KEY_PATTERN).meta({ description: `${IDEMPOTENCY_KEY_RULE}. Same key and same body within ${LIMITS.idempotencyWindowMs / 3_600_000} hours replays the first response.` }),
  { code: 'invalid_idempotency_key', detail: () => `Idempotency-Key takes ${IDEMPOTENCY_KEY_RULE}.` },
);

/** The longest image_urls entry, as spec 4.1 bounds callback_url: nothing a client sends is kept unbounded. */
export const MAX_IMAGE_URL = LIMITS.callbackUrlChars;

/** `null` for a public http(s) URL or an `asset://<id>` URI; otherwise why the URL is refused. */
export function imageUrlProblem(url: string): string | null {
  if (/^asset:\/\/\d{1,15}$/.test(url)) return Number(url.slice('asset://'.length)) >= 1 ? null : 'asset ids start at 1.';
  if (url.startsWith('asset:')) return 'an asset URI is asset://<asset id>.';
  if (url.length > MAX_IMAGE_URL) return `longer than ${MAX_IMAGE_URL} characters.`;
  const parsed = parseUrl(url);
  if (!parsed) return 'not an absolute URL.';
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return `must be http(s) or asset://, got ${parsed.protocol.slice(0, -1)}.`;
  if (parsed.username || parsed.password) return 'must not carry credentials.';
  return null;
}

/** The asset id of an `asset://<id>` URI, else `null`. */
export function assetUriId(url: string): number | null {
  return /^asset:\/\/\d{1,15}$/.test(url) ? Number(url.slice('asset://'.length)) : null;
}

/** One reference image: a public http(s) URL or an `asset://` URI (spec 4.1, 4.7). */
export const ImageUrl = rule(
  z.string().superRefine((url, ctx) => {
    const problem = imageUrlProblem(url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }).meta({ format: 'uri', description: 'A public http(s) URL, or asset://<id> of one of your moderated assets.' }),
  { code: 'invalid_image_url', detail: ({ where, issue }) => `${where}: ${issue.code === 'custom' ? issue.message : 'expected a URL.'}` },
);

/** An ISO 8601 timestamp in UTC (spec: "All timestamps are ISO 8601 in UTC"). */
export const Timestamp = z.iso.datetime();
/** An absolute link. */
export const Link = z.url();

/** Spec 7 `user_action.kind`: the values the problem builder of protocol/problem.ts types its `user_action` with. */
export const USER_ACTIONS = USER_ACTION_KINDS;

/** Spec 2.11 and 7: every error body (RFC 9457), with the members of section 7 and the extra members by code. */
export const Problem = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.int(),
    detail: z.string(),
    instance: z.string().nullable(),
    code: z.string().meta({ description: 'Stable machine-readable code (spec 7); build on it, not on the sentences.' }),
    error: z.string().meta({ description: 'Legacy message kept for older clients.' }),
    retryable: z.boolean(),
    retry_after: z.int().nullable(),
    user_action: z.object({ kind: z.enum(USER_ACTIONS), url: z.string().nullable() }).nullable(),
    trace_id: z.string(),
    required: z.int().optional(),
    balance: z.int().optional(),
    cost: z.int().optional(),
    item_index: z.int().optional(),
    asset_ids: z.array(z.int()).optional(),
    reason_code: z.string().optional(),
    allowed_values: z.array(z.unknown()).optional(),
    parameter: z.string().optional(),
  })
  .meta({ id: 'Problem', description: 'An application/problem+json body (RFC 9457, spec 2.11 and 7).' });

/** A warning of a 202 (spec 2.2: `subject_consent_missing`; ours: deprecated ids and members, http callbacks). */
export const Warning = z.object({ code: z.string(), detail: z.string() }).meta({ id: 'Warning' });
