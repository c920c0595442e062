import { WebhookVerificationError } from '../protocol/errors.js';

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/**
 * Turns a size limit (`262144`, `'256kb'`, `'1mb'`) into bytes; throws a TypeError naming the option.
 */
export function parseLimit(limit: unknown, name = 'limit'): number {
  if (typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0) return limit;
  const match = typeof limit === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(limit) : null;
  if (match) {
    const bytes = Math.floor(Number(match[1]) * UNITS[(match[2] ?? 'b').toLowerCase()]!);
    if (bytes > 0) return bytes;
  }
  throw new TypeError(`Expected \`${name}\` to be a positive number of bytes or a size like '256kb', got ${JSON.stringify(limit)}.`);
}

export function tooLarge(limit: number): WebhookVerificationError {
  return new WebhookVerificationError('body_too_large', 413, `The body is larger than the receiver's limit of ${limit} bytes.`);
}
