import { validateVideo, type Refusal, type Validated, type ValidateOptions, type VideoCommand } from './validate.js';

/** Spec 4.2 and 8: a batch has 1-5 items. */
export const MAX_BATCH_ITEMS = 5;

/**
 * A POST /videos/batch body (spec 4.2): every item validated after `defaults` fill the fields it omits
 * (a field sent as null counts as omitted); the first item that fails refuses the whole batch, with its
 * `item_index`. Nothing of a refused batch is created or charged.
 * @example validateBatch({ defaults: { model: 'cinema' }, items: [{ prompt: 'a' }, { prompt: 'b', duration: 10 }] }, options)
 */
export function validateBatch(body: unknown, options: ValidateOptions): Validated<VideoCommand[]> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return refuse({ code: 'invalid_json', detail: 'The body must be a JSON object with items.' });
  const { items, defaults } = body as { items?: unknown; defaults?: unknown };
  if (!Array.isArray(items) || items.length === 0) {
    return refuse({ code: 'invalid_json', detail: `items must be an array of 1-${MAX_BATCH_ITEMS} clip requests.` });
  }
  if (items.length > MAX_BATCH_ITEMS) return refuse({ code: 'batch_too_large', detail: `A batch has at most ${MAX_BATCH_ITEMS} items, got ${items.length}.` });
  if (defaults !== undefined && defaults !== null && (typeof defaults !== 'object' || Array.isArray(defaults))) {
    return refuse({ code: 'invalid_json', detail: 'defaults must be an object with the fields of POST /videos.' });
  }
  const commands: VideoCommand[] = [];
  for (const [index, item] of items.entries()) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return refuse({ code: 'invalid_json', detail: `items[${index}] must be an object.`, extra: { item_index: index } });
    }
    const result = validateVideo(merge(defaults as Record<string, unknown> | null | undefined, item as Record<string, unknown>), options);
    if (!result.ok) {
      const { refusal } = result;
      return refuse({ ...refusal, detail: `items[${index}]: ${refusal.detail}`, extra: { ...refusal.extra, item_index: index } });
    }
    commands.push(result.value);
  }
  return { ok: true, value: commands };
}

function merge(defaults: Record<string, unknown> | null | undefined, item: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...(defaults ?? {}) };
  for (const [key, value] of Object.entries(item)) if (value !== null && value !== undefined) merged[key] = value;
  return merged;
}

function refuse(refusal: Refusal): { ok: false; refusal: Refusal } {
  return { ok: false, refusal };
}
