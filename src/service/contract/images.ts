import { z } from 'zod';
import { canonicalConsent, ImageUrl, Link, pathId, queryInteger, SubjectConsentInput, Timestamp, type SubjectConsent } from './common.js';
import { LIMITS } from './limits.js';
import { imagePrice, type ImageQuality } from './pricing.js';
import { cross, rule } from './problems.js';
import { TEMPLATE_NAMES, TEMPLATES, type TemplateName } from './templates.js';

// Images: spec 2.7, 2.10, 3.3, 4.7-4.11, as data, with the rules that span fields (templates, characters,
// photos, consent, max_credits), so POST /v1/images and the assistant's create_image run the same ones.

/** Spec 4.7 and 8. */
export const MAX_DESCRIPTION = LIMITS.imageDescriptionChars;
export const MAX_TEXT = LIMITS.imageTextChars;
export const MAX_IMAGE_PHOTOS = LIMITS.imagePhotos;
export const IMAGE_RATIOS = ['1:1', '9:16', '4:5', '16:9', '3:4'] as const;
export type ImageRatio = (typeof IMAGE_RATIOS)[number];
export const IMAGE_QUALITIES = ['standard', 'hd'] as const satisfies readonly ImageQuality[];
export const IMAGE_TYPES = ['image', 'character'] as const;
export const CHARACTER_AGES = ['18-25', '26-35', '36-50', '51+'] as const;
export const CHARACTER_STYLES = ['photo', 'cinematic', 'animated', 'illustrated'] as const;
/** Spec 2.7 and 3.3. */
export const IMAGE_JOB_STATUSES = ['generating', 'done', 'partial', 'failed'] as const;
/** Spec 2.10. */
export const IMAGE_ERROR_CODES = ['prompt_blocked', 'upload_blocked', 'result_blocked', 'copyright_blocked', 'real_person_blocked', 'document_blocked', 'busy', 'timeout', 'failed'] as const;
export type ImageErrorCode = (typeof IMAGE_ERROR_CODES)[number];
/** Spec 2.7 `animate`. */
export const ANIMATE_VALUES = ['trusted', 'ok', 'maybe', 'no'] as const;
/** Spec 4.9 and 8: the image job list pages 1-50 jobs, 20 by default; GET /images/{id} waits 0-30 s. */
export const IMAGE_PAGE = LIMITS.imagePage;
export const MAX_WAIT_SECONDS = LIMITS.imageWaitSeconds;

const text = (limit: number, description: string) => rule(z.string().max(limit), { code: 'invalid_parameter' }).nullish().meta({ description });

const photos = (of: string) => ({ code: of === 'asset_ids' ? 'invalid_asset_id' : 'invalid_image_url', when: { too_big: 'too_many_images' }, detail: ({ issue, where }: { issue: z.core.$ZodIssue; where: string }) => (issue.code === 'too_big' ? `At most ${MAX_IMAGE_PHOTOS} photos (asset_ids and image_urls together).` : `${where}: ${of === 'asset_ids' ? 'asset ids are integers >= 1' : 'expected an array of URLs'}.`) }) as const;

/** Every field of POST /images alone (spec 4.7). `null` is taken as absent; unknown members are ignored. */
export const ImageFields = z.object({
  description: text(MAX_DESCRIPTION, `Up to ${MAX_DESCRIPTION} characters; English, Arabic or Chinese. For edits, what to change. Required unless template is set.`),
  prompt: text(MAX_DESCRIPTION, 'Alias of description; when both are sent they must agree.'),
  type: rule(z.enum(IMAGE_TYPES), { code: 'invalid_parameter', allowed: IMAGE_TYPES }).nullish().meta({ description: 'image (default) or character.' }),
  template: rule(z.enum(TEMPLATE_NAMES), { code: 'preset_not_found', allowed: TEMPLATE_NAMES, detail: ({ value }) => `No template ${JSON.stringify(value)}.` }).nullish(),
  fields: rule(z.record(z.string(), z.string().nullable()), { code: 'invalid_parameter' }).nullish().meta({ description: 'Template fields (spec 4.8).' }),
  text: text(MAX_TEXT, `Up to ${MAX_TEXT} characters drawn into the image; spelling not guaranteed.`),
  aspect_ratio: rule(z.enum(IMAGE_RATIOS), { code: 'invalid_ratio', allowed: IMAGE_RATIOS }).nullish().meta({ description: 'Default 1:1.' }),
  quality: rule(z.enum(IMAGE_QUALITIES), { code: 'invalid_parameter', allowed: IMAGE_QUALITIES }).nullish().meta({ description: 'standard (default) or hd.' }),
  count: rule(z.literal([1, 4]), { code: 'invalid_parameter', allowed: [1, 4] }).nullish().meta({ description: '1 (default) or 4.' }),
  character: z
    .object({
      age: rule(z.enum(CHARACTER_AGES), { code: 'preset_not_found', allowed: CHARACTER_AGES, detail: ({ value }) => `character.age: no preset ${JSON.stringify(value)}.` }).nullish(),
      style: rule(z.enum(CHARACTER_STYLES), { code: 'preset_not_found', allowed: CHARACTER_STYLES, detail: ({ value }) => `character.style: no preset ${JSON.stringify(value)}.` }).nullish(),
    })
    .meta({ description: 'For type character: age and style; no photos may be sent.' })
    .nullish(),
  asset_ids: rule(z.array(z.int().min(1)).max(MAX_IMAGE_PHOTOS), photos('asset_ids')).nullish().meta({ description: `Up to ${MAX_IMAGE_PHOTOS} photos to edit or combine.` }),
  image_urls: rule(z.array(ImageUrl).max(MAX_IMAGE_PHOTOS), photos('image_urls')).nullish().meta({ description: `Up to ${MAX_IMAGE_PHOTOS} public URLs; need subject_consent.` }),
  subject_consent: SubjectConsentInput.nullish(),
  max_credits: rule(z.int().min(0), { code: 'invalid_parameter' }).nullish().meta({ description: 'If the cost would exceed it, the request is refused with 422 cost_exceeds_max.' }),
});
type Fields = z.output<typeof ImageFields>;

/** A POST /images body, checked, with its defaults applied and its price: what the image command runs. */
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

type Refuse = (path: PropertyKey[], message: string, code: Parameters<typeof cross>[0], extra?: Record<string, unknown>) => void;

/**
 * The rules of spec 4.7 and 4.8 that span fields, in the order of the spec's tables, and the command they
 * make; `refuse` is called for the first rule broken, and then nothing more is checked.
 */
function command(input: Fields, refuse: Refuse): ImageCommand | null {
  if (input.description != null && input.prompt != null && input.description !== input.prompt) {
    refuse(['prompt'], 'description and its alias prompt disagree: send one.', 'invalid_parameter', { parameter: 'prompt' });
    return null;
  }
  const description = (input.description ?? input.prompt ?? '').trim();
  const type = input.type ?? 'image';
  let template: TemplateName | null = null;
  const fields: Record<string, string> = {};
  if (input.template != null) {
    template = input.template;
    const spec = TEMPLATES[template];
    const given = input.fields ?? {};
    for (const name of Object.keys(given)) {
      if (!Object.hasOwn(spec.fields, name)) {
        refuse(['fields', name], `${template} has no field ${JSON.stringify(name)}; its fields are ${Object.keys(spec.fields).join(', ')}.`, 'invalid_parameter', { parameter: `fields.${name}`, allowed_values: Object.keys(spec.fields) });
        return null;
      }
    }
    for (const [name, field] of Object.entries(spec.fields)) {
      const value = given[name]?.trim() || null;
      if (field.kind === 'preset') {
        if (value !== null && !field.values.includes(value)) {
          refuse(['fields', name], `fields.${name} of ${template}: no preset ${JSON.stringify(value)}.`, 'preset_not_found', { allowed_values: field.values });
          return null;
        }
        fields[name] = value ?? field.values[0]!;
      } else if (value === null) {
        if (field.required) {
          refuse(['fields', name], `${template} needs fields.${name}.`, 'field_required');
          return null;
        }
      } else if (value.length > MAX_TEXT) {
        refuse(['fields', name], `fields.${name} is ${value.length} characters; the limit is ${MAX_TEXT}.`, 'invalid_parameter', { parameter: `fields.${name}` });
        return null;
      } else fields[name] = value;
    }
  } else if (input.fields != null) {
    refuse(['fields'], 'fields go with a template.', 'invalid_parameter', { parameter: 'fields' });
    return null;
  }
  if (description === '' && template === null && type !== 'character') {
    refuse(['description'], 'Send a description (or prompt), or a template.', 'missing_input');
    return null;
  }
  const drawn = input.text?.trim() || null;
  for (const [name, value] of [['description', description], ['text', drawn ?? ''], ...Object.entries(fields).map(([key, v]) => [`fields.${key}`, v])] as const) {
    const script = unsupportedScript(value);
    if (script) {
      refuse([name], `${name} is in ${script}; images take English, Arabic or Chinese.`, 'text_script_unsupported');
      return null;
    }
  }
  const assetIds = input.asset_ids ?? [];
  const imageUrls = input.image_urls ?? [];
  const photoCount = assetIds.length + imageUrls.length;
  const subjectConsent = input.subject_consent == null ? null : canonicalConsent(input.subject_consent);
  let character: ImageCommand['character'] = null;
  if (type === 'character') {
    if (photoCount > 0) {
      refuse(['asset_ids'], 'An AI character is made up: send no photos (asset_ids or image_urls).', 'character_no_photos');
      return null;
    }
    const { age, style } = input.character ?? {};
    if (age == null || style == null) {
      const missing = age == null ? 'age' : 'style';
      refuse(['character', missing], `A character needs character.${missing}.`, 'field_required', { allowed_values: missing === 'age' ? CHARACTER_AGES : CHARACTER_STYLES });
      return null;
    }
    character = { age, style };
  }
  const limit = template ? TEMPLATES[template].photos.max : MAX_IMAGE_PHOTOS;
  if (photoCount > limit) {
    refuse(['asset_ids'], template && limit === 0 ? `${template} takes no photos.` : `At most ${limit} photos (asset_ids and image_urls together).`, 'too_many_images');
    return null;
  }
  if (template && photoCount < TEMPLATES[template].photos.min) {
    const { min, max } = TEMPLATES[template].photos;
    refuse(['asset_ids'], `${template} needs ${min === max ? min : `${min}-${max}`} photo${max > 1 ? 's' : ''} (asset_ids or image_urls).`, 'photos_required');
    return null;
  }
  if (imageUrls.length > 0 && subjectConsent === null) {
    refuse(['subject_consent'], 'image_urls need subject_consent: self, permission or no_real_person.', 'consent_required');
    return null;
  }
  const consent = template ? TEMPLATES[template].consent : null;
  if (consent && photoCount > 0 && (subjectConsent === null || !consent.includes(subjectConsent))) {
    refuse(['subject_consent'], `${template} photos need subject_consent ${consent.join(' or ')}.`, 'consent_required');
    return null;
  }
  const quality = input.quality ?? 'standard';
  const count = type === 'character' ? 4 : (input.count ?? 1);
  const price = imagePrice({ type, quality, count });
  const maxCredits = input.max_credits ?? null;
  if (maxCredits !== null && price > maxCredits) {
    refuse(['max_credits'], `This request costs ${price} credits; max_credits is ${maxCredits}.`, 'cost_exceeds_max', { cost: price });
    return null;
  }
  return { description, type, template, fields, text: drawn, aspectRatio: input.aspect_ratio ?? '1:1', quality, count, character, assetIds, imageUrls, subjectConsent, maxCredits, price };
}

/** POST /images (spec 4.7, 4.8): the body, checked field by field and across fields, as its command with its price. */
export const ImageRequest = ImageFields.superRefine((input, ctx) => {
  command(input, (path, message, code, extra) => ctx.addIssue({ code: 'custom', path, message, params: cross(code, extra) }));
})
  .transform((input) => command(input, () => undefined)!)
  // The cross-field rules as JSON Schema too, so a validator of the document takes what the service takes
  // (null is absent, as `command` reads it): fields go with a template; and a description or its alias
  // with something besides white space, a template or a character, else 400 missing_input (spec 4.7).
  .meta({
    if: { required: ['fields'], properties: { fields: { type: 'object' } } },
    then: { required: ['template'], properties: { template: { type: 'string' } } },
    anyOf: [
      { required: ['description'], properties: { description: { type: 'string', pattern: '\\S' } } },
      { required: ['prompt'], properties: { prompt: { type: 'string', pattern: '\\S' } } },
      { required: ['template'], properties: { template: { type: 'string' } } },
      { required: ['type'], properties: { type: { const: 'character' } } },
    ],
  });
export type ImageRequestInput = z.input<typeof ImageRequest>;

const SCRIPTS = ['Cyrillic', 'Greek', 'Hebrew', 'Devanagari', 'Bengali', 'Tamil', 'Thai', 'Hangul', 'Hiragana', 'Katakana', 'Armenian', 'Georgian', 'Ethiopic'];

/**
 * The first script in `text` that images cannot draw (spec 4.7: English, Arabic or Chinese, so Latin,
 * Arabic and Han letters; digits, punctuation and emoji are common to all), or `null`.
 */
export function unsupportedScript(value: string): string | null {
  for (const char of value) {
    if (!/\p{L}/u.test(char) || /[\p{Script=Latin}\p{Script=Arabic}\p{Script=Han}]/u.test(char)) continue;
    return SCRIPTS.find((script) => new RegExp(`\\p{Script=${script}}`, 'u').test(char)) ?? 'an unsupported script';
  }
  return null;
}

/** GET /images (spec 4.9). */
export const ImageListQuery = z.object({
  limit: queryInteger('limit', { min: IMAGE_PAGE.min, max: IMAGE_PAGE.max, fallback: IMAGE_PAGE.default }),
  before: queryInteger('before', { min: 1 }),
});
/** GET /images/{id} (spec 4.10). */
export const ImageWaitQuery = z.object({ wait: queryInteger('wait', { min: 0, max: MAX_WAIT_SECONDS, fallback: 0, unit: 'seconds' }) });
export const ImagePath = z.object({ id: pathId('image job') });

/** Spec 2.7: one image of a job. */
export const ImageItem = z
  .object({
    id: z.int(),
    url: Link.meta({ description: 'Permanent unguessable link to the original file; stops working when the job’s images are deleted.' }),
    thumbnail_url: Link,
    width: z.int(),
    height: z.int(),
    format: z.string(),
    animate: z.enum(ANIMATE_VALUES),
    trusted_until: Timestamp.nullable(),
  })
  .meta({ id: 'ImageItem' });

/** Spec 2.7. */
export const ImageJob = z
  .object({
    id: z.int(),
    object: z.literal('image_job'),
    status: z.enum(IMAGE_JOB_STATUSES),
    type: z.enum(IMAGE_TYPES),
    quality: z.enum(IMAGE_QUALITIES),
    aspect_ratio: z.enum(IMAGE_RATIOS),
    count: z.int(),
    credits_reserved: z.int(),
    credits_charged: z.int().nullable().meta({ description: 'null while running; the final amount once the job ends.' }),
    credits_refunded: z.int().optional().meta({ description: 'Present on finished jobs.' }),
    images: z.array(ImageItem),
    estimated_time_seconds: z.int(),
    poll_url: Link,
    error_code: z.enum(IMAGE_ERROR_CODES).optional().meta({ description: 'On failed jobs (spec 2.10).' }),
    created_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable(),
  })
  .meta({ id: 'ImageJob' });

/** Spec 4.9 (envelope not shown: ours). */
export const ImageJobList = z.object({ data: z.array(ImageJob), next_before: z.int().nullable().meta({ description: 'The cursor of the next older page, or null on the last one.' }) }).meta({ id: 'ImageJobList' });

/** Spec 4.11. */
export const DeleteImageResponse = z.object({ id: z.int(), deleted: z.boolean(), images_deleted: z.int() }).meta({ id: 'DeleteImageResponse' });
