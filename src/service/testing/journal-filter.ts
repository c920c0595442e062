// The journal's `path` filter matches a template segment by segment, with no regular expression built
// from it (one per `{x}` can block the event loop on a long path): its cost is the path's length, whatever
// the filter holds.

// The bounds of a `path` filter (at most 2,048 characters and 32 segments) are the contract's, which states them.
import { MAX_PATH_FILTER_CHARS, MAX_PATH_FILTER_SEGMENTS } from './contract/test-helpers.js';

export { MAX_PATH_FILTER_CHARS, MAX_PATH_FILTER_SEGMENTS };

/** Why a `path` filter is refused, or null: it must fit `MAX_PATH_FILTER_CHARS` and `MAX_PATH_FILTER_SEGMENTS`. */
export function pathFilterProblem(path: string): string | null {
  if (path.length > MAX_PATH_FILTER_CHARS) return `path is at most ${MAX_PATH_FILTER_CHARS} characters, got ${path.length}.`;
  let segments = 0;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) segments++;
  if (segments > MAX_PATH_FILTER_SEGMENTS) return `path has at most ${MAX_PATH_FILTER_SEGMENTS} segments (/…), got ${segments}.`;
  return null;
}

/**
 * Whether `path` is named by `filter`: the same path, or a template whose `{name}` segments each stand for
 * one non-empty segment (`/v1/videos/{id}` names `/v1/videos/7`, not `/v1/videos/` or `/v1/videos/7/retry`).
 * A segment is a placeholder only when it is a whole `{…}`; anything else is compared as written.
 */
export function pathMatches(filter: readonly string[], path: string): boolean {
  let from = 0;
  for (let i = 0; i < filter.length; i++) {
    const last = i === filter.length - 1;
    const slash = path.indexOf('/', from);
    if (last ? slash !== -1 : slash === -1) return false;
    const end = last ? path.length : slash;
    const segment = filter[i]!;
    if (isPlaceholder(segment)) {
      if (end === from) return false;
    } else if (end - from !== segment.length || !path.startsWith(segment, from)) return false;
    from = end + 1;
  }
  return true;
}

/** A filter's segments, for `pathMatches`. */
export function pathSegments(filter: string): string[] {
  return filter.split('/');
}

function isPlaceholder(segment: string): boolean {
  return segment.length >= 2 && segment.startsWith('{') && segment.endsWith('}') && segment.indexOf('{', 1) === -1 && segment.indexOf('}') === segment.length - 1;
}
