import type { z } from 'zod';
import { refusalOf, type Refusal, type RefusalOptions } from '../contract/problems.js';

// JSON Pointers (RFC 6901) for refusals of bodies written as files, where "clips[3].duration" is less
// useful than "/clips/3/duration" (a route's `pointer: true`, such as the test helpers' seed fixture).

/**
 * The JSON Pointer of a path: `''` for the whole document, `~` and `/` escaped as `~0` and `~1`.
 * @example jsonPointer(['clips', 3, 'duration']) // '/clips/3/duration'
 */
export function jsonPointer(path: readonly PropertyKey[]): string {
  return path.map((key) => `/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/**
 * The refusal of a failed parse, as `refusalOf` makes it, with `pointer`: the JSON Pointer of the member
 * the first issue is about (for a route with `pointer: true`).
 * @example pointerRefusal(SeedFixture, parsed.error.issues, body) // { code: 'invalid_duration', detail, extra: { pointer: '/clips/0/duration', … } }
 */
export function pointerRefusal(schema: z.ZodType, issues: readonly z.core.$ZodIssue[], root: unknown, options: RefusalOptions = {}): Refusal {
  const refusal = refusalOf(schema, issues, root, options);
  const first = issues[0];
  return { ...refusal, extra: { ...refusal.extra, pointer: jsonPointer(first?.path ?? []) } };
}
