import { assistantClipPrice, type VideoModel } from '../contract/pricing.js';

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
