import { z } from 'zod';
import type { ProblemCode } from '../../protocol/problem.js';
import { imagePrice, type ImageQuality } from '../contract/pricing.js';
import { checkImageUrl, SUBJECT_CONSENTS, type Refusal, type SubjectConsent, type Validated } from '../videos/validate.js';
import { isTemplateName, TEMPLATES, type TemplateName } from '../contract/templates.js';

/** Spec 4.7 and 8. */
export const MAX_DESCRIPTION = 1000;
export const MAX_TEXT = 60;
export const MAX_IMAGE_PHOTOS = 3;
export const IMAGE_RATIOS = ['1:1', '9:16', '4:5', '16:9', '3:4'] as const;
export const CHARACTER_AGES = ['18-25', '26-35', '36-50', '51+'] as const;
export const CHARACTER_STYLES = ['photo', 'cinematic', 'animated', 'illustrated'] as const;

export type ImageRatio = (typeof IMAGE_RATIOS)[number];

/** A POST /images body, checked, with its defaults applied and its price. */
export interface ImageCommand {
  /** What to make or, for edits, what to change ('' for a template without one). */
  description: string;
  type: 'image' | 'character';
  template: TemplateName | null;
  /** The template's fields, each preset defaulted to its first value. */
  fields: Record<string, string>;
  text: string | null;
  aspectRatio: ImageRatio;
  quality: ImageQuality;
  count: 1 | 4;
  character: { age: (typeof CHARACTER_AGES)[number]; style: (typeof CHARACTER_STYLES)[number] } | null;
  assetIds: number[];
  imageUrls: string[];
  subjectConsent: SubjectConsent | null;
  maxCredits: number | null;
  /** Credits reserved when the job starts (spec 2.13). */
  price: number;
}

const nullish = <T extends z.ZodType>(schema: T) => schema.nullish();

/** The body of POST /images (spec 4.7), declared once; unknown members are ignored. */
export const ImageBody = z.object({
  description: nullish(z.string()),
  prompt: nullish(z.string()),
  type: nullish(z.enum(['image', 'character'])),
  template: nullish(z.string()),
  fields: nullish(z.record(z.string(), z.string().nullable())),
  text: nullish(z.string()),
  aspect_ratio: nullish(z.enum(IMAGE_RATIOS)),
  quality: nullish(z.enum(['standard', 'hd'])),
  count: nullish(z.union([z.literal(1), z.literal(4)])),
  character: nullish(z.object({ age: nullish(z.string()), style: nullish(z.string()) })),
  asset_ids: nullish(z.array(z.number().int().positive())),
  image_urls: nullish(z.array(z.string())),
  subject_consent: nullish(z.enum([...SUBJECT_CONSENTS, 'third_party_with_permission'])),
  max_credits: nullish(z.number().int().nonnegative()),
});

type Field = keyof z.infer<typeof ImageBody>;

/** A field's code when its value has the wrong type or is not allowed; `invalid_json` where the spec names none. */
const FIELD_CODES: Partial<Record<Field, ProblemCode>> = {
  aspect_ratio: 'invalid_ratio',
  asset_ids: 'invalid_asset_id',
  image_urls: 'invalid_image_url',
  subject_consent: 'invalid_subject_consent',
  template: 'preset_not_found',
};

const ALLOWED: Partial<Record<Field, readonly unknown[]>> = {
  type: ['image', 'character'],
  aspect_ratio: IMAGE_RATIOS,
  quality: ['standard', 'hd'],
  count: [1, 4],
  subject_consent: SUBJECT_CONSENTS,
};

/**
 * Checks one image request against every rule of spec 4.7 and the template table of 4.8 that needs no
 * I/O, in the order of its table, applies the defaults and prices it (refusing above `max_credits`).
 * @example validateImage({ template: 'poster', fields: { headline: 'Grand opening' } })
 */
export function validateImage(body: unknown): Validated<ImageCommand> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return refuse('invalid_json', 'The body must be a JSON object.');
  const parsed = ImageBody.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path[0] as Field;
    const allowed = ALLOWED[field];
    const where = issue.path.join('.');
    return refuse(FIELD_CODES[field] ?? 'invalid_json', `${where}: ${allowed ? `must be one of ${allowed.join(', ')}` : `expected ${expected(issue)}`}.`, allowed ? { allowed_values: allowed } : undefined);
  }
  const input = parsed.data;

  if (input.description != null && input.prompt != null && input.description !== input.prompt) {
    return refuse('invalid_json', 'description and its alias prompt disagree: send one.');
  }
  const description = (input.description ?? input.prompt ?? '').trim();
  if (description.length > MAX_DESCRIPTION) return refuse('invalid_json', `description is ${description.length} characters; the limit is ${MAX_DESCRIPTION}.`);
  const type = input.type ?? 'image';

  let template: TemplateName | null = null;
  const fields: Record<string, string> = {};
  if (input.template != null) {
    if (!isTemplateName(input.template)) return refuse('preset_not_found', `No template ${JSON.stringify(input.template)}.`, { allowed_values: Object.keys(TEMPLATES) });
    template = input.template;
    const given = input.fields ?? {};
    for (const name of Object.keys(given)) {
      if (!Object.hasOwn(TEMPLATES[template].fields, name)) {
        return refuse('invalid_json', `${template} has no field ${JSON.stringify(name)}; its fields are ${Object.keys(TEMPLATES[template].fields).join(', ')}.`);
      }
    }
    for (const [name, spec] of Object.entries(TEMPLATES[template].fields)) {
      const value = given[name]?.trim() || null;
      if (spec.kind === 'preset') {
        if (value !== null && !spec.values.includes(value)) return refuse('preset_not_found', `fields.${name} of ${template}: no preset ${JSON.stringify(value)}.`, { allowed_values: spec.values });
        fields[name] = value ?? spec.values[0]!;
      } else if (value === null) {
        if (spec.required) return refuse('field_required', `${template} needs fields.${name}.`);
      } else {
        if (value.length > MAX_TEXT) return refuse('invalid_json', `fields.${name} is ${value.length} characters; the limit is ${MAX_TEXT}.`);
        fields[name] = value;
      }
    }
  } else if (input.fields != null) {
    return refuse('invalid_json', 'fields go with a template.');
  }
  if (description === '' && template === null && type !== 'character') return refuse('missing_input', 'Send a description (or prompt), or a template.');

  const text = input.text?.trim() || null;
  if (text !== null && text.length > MAX_TEXT) return refuse('invalid_json', `text is ${text.length} characters; the limit is ${MAX_TEXT}.`);
  for (const [name, value] of [['description', description], ['text', text ?? ''], ...Object.entries(fields)] as const) {
    const script = unsupportedScript(value);
    if (script) return refuse('text_script_unsupported', `${name === 'description' || name === 'text' ? name : `fields.${name}`} is in ${script}; images take English, Arabic or Chinese.`);
  }

  const photos = [...(input.asset_ids ?? []), ...(input.image_urls ?? [])];
  const subjectConsent = input.subject_consent == null ? null : input.subject_consent === 'third_party_with_permission' ? 'permission' : input.subject_consent;

  let character: ImageCommand['character'] = null;
  if (type === 'character') {
    if (photos.length > 0) return refuse('character_no_photos', 'An AI character is made up: send no photos (asset_ids or image_urls).');
    const { age, style } = input.character ?? {};
    if (age == null) return refuse('field_required', 'A character needs character.age.', { allowed_values: CHARACTER_AGES });
    if (style == null) return refuse('field_required', 'A character needs character.style.', { allowed_values: CHARACTER_STYLES });
    if (!(CHARACTER_AGES as readonly string[]).includes(age)) return refuse('preset_not_found', `character.age: no preset ${JSON.stringify(age)}.`, { allowed_values: CHARACTER_AGES });
    if (!(CHARACTER_STYLES as readonly string[]).includes(style)) return refuse('preset_not_found', `character.style: no preset ${JSON.stringify(style)}.`, { allowed_values: CHARACTER_STYLES });
    character = { age: age as (typeof CHARACTER_AGES)[number], style: style as (typeof CHARACTER_STYLES)[number] };
  }

  const limit = template ? TEMPLATES[template].photos.max : MAX_IMAGE_PHOTOS;
  if (photos.length > limit) {
    return refuse('too_many_images', template && limit === 0 ? `${template} takes no photos.` : `At most ${limit} photos (asset_ids and image_urls together).`);
  }
  for (const [index, url] of (input.image_urls ?? []).entries()) {
    const checked = checkImageUrl(url);
    if (typeof checked === 'string') return refuse('invalid_image_url', `image_urls[${index}]: ${checked}`);
  }
  if (template && photos.length < TEMPLATES[template].photos.min) {
    const { min, max } = TEMPLATES[template].photos;
    return refuse('photos_required', `${template} needs ${min === max ? min : `${min}-${max}`} photo${max > 1 ? 's' : ''} (asset_ids or image_urls).`);
  }
  if ((input.image_urls?.length ?? 0) > 0 && subjectConsent === null) return refuse('consent_required', 'image_urls need subject_consent: self, permission or no_real_person.');
  const consent = template ? TEMPLATES[template].consent : null;
  if (consent && photos.length > 0 && (subjectConsent === null || !consent.includes(subjectConsent))) {
    return refuse('consent_required', `${template} photos need subject_consent ${consent.join(' or ')}.`);
  }

  const quality = input.quality ?? 'standard';
  const count = type === 'character' ? 4 : (input.count ?? 1);
  const price = imagePrice({ type, quality, count });
  const maxCredits = input.max_credits ?? null;
  if (maxCredits !== null && price > maxCredits) return refuse('cost_exceeds_max', `This request costs ${price} credits; max_credits is ${maxCredits}.`, { cost: price });

  return {
    ok: true,
    value: {
      description, type, template, fields, text, aspectRatio: input.aspect_ratio ?? '1:1', quality, count, character,
      assetIds: input.asset_ids ?? [], imageUrls: input.image_urls ?? [], subjectConsent, maxCredits, price,
    },
  };
}

const SCRIPTS = ['Cyrillic', 'Greek', 'Hebrew', 'Devanagari', 'Bengali', 'Tamil', 'Thai', 'Hangul', 'Hiragana', 'Katakana', 'Armenian', 'Georgian', 'Ethiopic'];

/**
 * The first script in `text` that images cannot draw (spec 4.7: English, Arabic or Chinese, so Latin,
 * Arabic and Han letters; digits, punctuation and emoji are common to all), or `null`.
 */
export function unsupportedScript(text: string): string | null {
  for (const char of text) {
    if (!/\p{L}/u.test(char) || /[\p{Script=Latin}\p{Script=Arabic}\p{Script=Han}]/u.test(char)) continue;
    return SCRIPTS.find((script) => new RegExp(`\\p{Script=${script}}`, 'u').test(char)) ?? 'an unsupported script';
  }
  return null;
}

function expected(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`;
  if (issue.code === 'too_small') return 'a value >= 0';
  return issue.message;
}

function refuse(code: ProblemCode, detail: string, extra?: Record<string, unknown>): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: extra ? { code, detail, extra } : { code, detail } };
}
