/**
 * The templates of spec 4.8: each one's fields (with their allowed values, or free text), which are
 * required, and how many photos it takes. Declared once: validation, the docs and the renderer read it.
 */

export const TEMPLATE_NAMES = ['eid', 'diwali', 'national_day', 'festive', 'celebration', 'headshot', 'product', 'poster'] as const;
export type TemplateName = (typeof TEMPLATE_NAMES)[number];

/** A field: a list of presets (the first is the default), or free text drawn into the image. */
export type TemplateField = { kind: 'preset'; values: readonly string[] } | { kind: 'text'; required: boolean };

export interface TemplateSpec {
  fields: Readonly<Record<string, TemplateField>>;
  /** Photos it takes: none, or a range. */
  photos: { min: number; max: number };
  /** Consent values its photos may carry (spec 4.8: headshot, "self or permission"), or null for any. */
  consent: readonly string[] | null;
  /** A card: never flags, emblems, places of worship or religious text (spec 4.8). */
  card: boolean;
}

const preset = (...values: string[]): TemplateField => ({ kind: 'preset', values });
const text = (required = false): TemplateField => ({ kind: 'text', required });
const NONE = { min: 0, max: 0 };

export const TEMPLATES: Readonly<Record<TemplateName, TemplateSpec>> = Object.freeze({
  eid: { fields: { style: preset('emerald_gold', 'pastel', 'midnight', 'minimal'), greeting: text() }, photos: NONE, consent: null, card: true },
  diwali: { fields: { style: preset('warm_gold', 'rangoli', 'maroon'), greeting: text() }, photos: NONE, consent: null, card: true },
  national_day: { fields: { style: preset('ribbons', 'skyline', 'desert'), greeting: text() }, photos: NONE, consent: null, card: true },
  festive: {
    fields: { occasion: preset('christmas', 'new_year', 'lunar_new_year'), look: preset('classic', 'modern', 'illustrated'), greeting: text() },
    photos: NONE, consent: null, card: true,
  },
  celebration: {
    fields: { occasion: preset('birthday', 'wedding', 'new_baby', 'graduation', 'congrats'), look: preset('elegant', 'playful', 'floral'), greeting: text() },
    photos: NONE, consent: null, card: true,
  },
  headshot: {
    fields: { outfit: preset('blazer', 'smart_casual', 'modest', 'keep'), background: preset('studio', 'office', 'outdoor') },
    photos: { min: 1, max: 1 }, consent: ['self', 'permission'], card: false,
  },
  product: { fields: { scene: preset('marble', 'desert', 'studio', 'botanical', 'dark') }, photos: { min: 1, max: 3 }, consent: null, card: false },
  poster: { fields: { headline: text(true), subject: text(), look: preset('bold', 'luxury', 'playful', 'minimal') }, photos: NONE, consent: null, card: false },
});

export function isTemplateName(value: unknown): value is TemplateName {
  return typeof value === 'string' && Object.hasOwn(TEMPLATES, value);
}
