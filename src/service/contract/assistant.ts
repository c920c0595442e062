import type { ProblemCode } from '../../protocol/problem.js';
import { LIMITS } from './limits.js';
import { assistantClipPrice, IMAGE_PRICES, MODEL_SPECS, VIDEO_MODELS, type VideoModel } from './pricing.js';

// The assistant endpoint's tools (spec 5.7), as the contract knows them: each is named for
// the operation of the document it performs, so the test controls (a fault rule's `match.operation`, the
// request journal's `operation`) name a tool as they name a route.

/** Each tool of `/mcp` and the operationId whose codes it can answer (a fault rule's `problem` is checked against them). */
export const ASSISTANT_TOOLS = Object.freeze({
  list_effects: 'getPricing',
  create_clip: 'createVideo',
  create_clip_from_effect: 'createVideo',
  get_clip: 'getVideo',
  list_clips: 'listVideos',
  cancel_clip: 'deleteVideo',
  create_image: 'createImage',
  get_image: 'getImage',
  get_account: 'getAccount',
  get_topup_link: 'getAccount',
  start_photo_upload: 'uploadAsset',
  get_photo: 'getAsset',
  list_photos: 'listAssets',
} as const);

export type AssistantTool = keyof typeof ASSISTANT_TOOLS;

/** The tools' names, in the order above. */
export const ASSISTANT_TOOL_NAMES = Object.freeze(Object.keys(ASSISTANT_TOOLS) as AssistantTool[]);

/** Whether `name` is a tool of the assistant endpoint. */
export function isAssistantTool(name: string): name is AssistantTool {
  return Object.hasOwn(ASSISTANT_TOOLS, name);
}

/** A fault rule's or the journal's `operation`: an operationId (getVideo) or a tool's name (create_clip). */
export const OPERATION_NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;

/**
 * The refusal codes only the assistant's tools answer (spec 5.7's rules and the tools' own checks), with what
 * each means; every other refusal of a tool is a code of `/v1` (`PROBLEM_CODES`), passed on as it is.
 * Declared once here; `refuse` takes only these or a problem code, and docs/service.md's
 * table of them is made from this.
 */
export const ASSISTANT_CODES = Object.freeze({
  daily_limit_reached: 'the call would take the assistant past its daily credit limit (rolling 24 hours)',
  too_many_running_clips: 'the assistant already has its most clips pending or rendering at once',
  unknown_effect: '`effect_id` is not an effect of list_effects',
  invalid_image_id: 'an `image_ids` entry is not one of the account\'s images made by create_image',
  image_not_animatable: 'an `image_ids` entry was edited from a photo of a real person (spec 2.7 `animate: no`): it stays an image',
  invalid_photo_id: 'a `photo_ids` entry is not one of the account\'s photos',
  photo_not_ready: 'a `photo_ids` entry is still being moderated',
  already_ended: 'cancel_clip of a clip that has already ended',
} as const);

/** A code only the assistant's tools answer. */
export type AssistantCode = keyof typeof ASSISTANT_CODES;

/** Every code a tool's refusal can carry: one of `/v1`'s problem codes, or one of the assistant's own. */
export type ToolCode = ProblemCode | AssistantCode;

/** The table of the assistant's own codes in docs/service.md. */
export function assistantCodeTable(): string {
  const rows = Object.entries(ASSISTANT_CODES).map(([code, meaning]) => `| \`${code}\` | ${meaning} |`);
  return ['| code | when |', '|---|---|', ...rows].join('\n');
}

// The effects catalogue names models by id and sets durations, so it is contract data.

/** One ready-made clip an assistant can offer by name: a prompt recipe on a fixed model and duration. */
export interface Effect {
  id: string;
  name: string;
  /** What the clip shows, in a sentence an assistant can repeat to the person. */
  description: string;
  model: VideoModel;
  /** Seconds. */
  duration: number;
  /** The prompt the clip is made from; `{subject}` is replaced by the tool's `subject` (or "the scene"). */
  prompt: string;
  /** Whether the effect is meant for a photo (`image_ids`) rather than a prompt alone. */
  wantsImage: boolean;
}

/**
 * The effects catalogue of the assistant endpoint (list_effects, create_clip_from_effect). Prices are the
 * assistant's base prices (spec 5.7: no API discount), from pricing.ts.
 */
export const EFFECTS: readonly Effect[] = Object.freeze([
  { id: 'slow-zoom', name: 'Slow zoom', description: 'A slow cinematic push-in on the subject, with a gentle depth-of-field shift.', model: 'standard', duration: 5, prompt: 'slow cinematic push-in on {subject}, shallow depth of field', wantsImage: true },
  { id: 'parallax-3d', name: '3D parallax', description: 'Turns a still photo into a 3D parallax move: foreground and background separate as the camera drifts sideways.', model: 'standard', duration: 5, prompt: '3D parallax camera drift across {subject}, layered depth', wantsImage: true },
  { id: 'golden-hour', name: 'Golden hour', description: 'Relights the scene in warm late-afternoon sun with slowly moving shadows.', model: 'standard', duration: 10, prompt: '{subject} in warm golden-hour light, long soft shadows moving slowly', wantsImage: false },
  { id: 'product-spin', name: 'Product spin', description: 'A clean studio turntable shot: the object rotates once on a seamless backdrop, in HD.', model: 'standard-hd', duration: 5, prompt: '{subject} rotating once on a turntable, seamless studio backdrop, soft key light', wantsImage: true },
  { id: 'claymation', name: 'Claymation', description: 'Restyles the subject as stop-motion clay animation with a handmade, slightly jittery feel.', model: 'cinema', duration: 5, prompt: '{subject} as stop-motion claymation, handmade textures, 12 fps feel', wantsImage: false },
  { id: 'dolly-zoom', name: 'Dolly zoom', description: 'The vertigo shot: the subject stays the same size while the background stretches away, in cinema HD.', model: 'cinema-hd', duration: 5, prompt: 'dolly zoom on {subject}, background stretching, dramatic', wantsImage: true },
] satisfies Effect[]);

export function findEffect(id: string): Effect | undefined {
  return EFFECTS.find((effect) => effect.id === id);
}

/** The effect as list_effects shows it, with its price in credits. */
export function effectView(effect: Effect) {
  return {
    id: effect.id,
    name: effect.name,
    description: effect.description,
    model: effect.model,
    duration: effect.duration,
    credits: assistantClipPrice(effect.model, effect.duration),
    wants_image: effect.wantsImage,
  };
}

/** The clip prompt of an effect for a subject. */
export function effectPrompt(effect: Effect, subject: string | undefined): string {
  return effect.prompt.replace('{subject}', subject && subject.trim() !== '' ? subject.trim() : 'the scene');
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * The spec's numbers in the words the tool descriptions, INSTRUCTIONS and the authorization page use, written
 * once, here, from LIMITS and pricing.ts.
 */
export const ASSISTANT_TEXT = Object.freeze({
  /** The rolling window of the daily limit: '24 hours'. */
  dailyWindow: `${LIMITS.assistant.dailyWindowMs / HOUR_MS} hours`,
  /** Credits per second of each model (spec 2.13, base prices): 'standard 2, standard-hd 4, …'. */
  clipPerSecond: VIDEO_MODELS.map((model) => `${model} ${MODEL_SPECS[model].perSecond}`).join(', '),
  /** The image prices (spec 2.13): 'standard 2 credits (4 variations 7), hd 4 (4 variations 14)'. */
  imagePrices: `standard ${IMAGE_PRICES.standard[1]} credits (4 variations ${IMAGE_PRICES.standard[4]}), hd ${IMAGE_PRICES.hd[1]} (4 variations ${IMAGE_PRICES.hd[4]})`,
});

/** The effects table of docs/service.md, made from EFFECTS. */
export function effectsTable(): string {
  const rows = EFFECTS.map((effect) => `| \`${effect.id}\` | ${effect.description} | ${effect.model} | ${effect.duration} | ${assistantClipPrice(effect.model, effect.duration)} | ${effect.wantsImage ? 'yes' : 'no'} |`);
  return ['| id | what it does | model | seconds | credits | `wants_image` (works best from a photo or image) |', '|---|---|---|---|---|---|', ...rows].join('\n');
}
