/**
 * Why an extra path under `/in/<channel>` is refused, or `null` when it may go to the local app.
 *
 * The listener appends the extra path to its `--forward-to` path by joining strings, so the local app
 * sees it as the sender sent it. That prefix is a boundary only if no part of the extra path can climb
 * out of it once the local app (or a proxy in front of it) normalises the path (a channel URL
 * must not open the whole local app). Refused, raw or percent-encoded in any case:
 * - dot segments (`..`, `.`, `%2e%2E`, `.%2e`), which climb out of the prefix;
 * - encoded slashes (`%2f`) and backslashes (`\`, `%5c`), which some servers decode or treat as `/`;
 * - `;` and `%3b`: path parameters, which Tomcat and Spring strip (`..;/` is `../` to them);
 * - `%25`: a double encoding (`%252e%252e`) turns into dot segments in an app that decodes twice;
 * - NUL and other control characters (`%00`-`%1f`, `%7f`), which truncate or split paths in some stacks;
 * - non-ASCII, raw or encoded (`%80`-`%ff`): overlong UTF-8 (`%c0%ae`) and Unicode normalisation
 *   (`．`, U+FF0E) turn into dots in some decoders;
 * - `%u002e`: IIS's own escape, which it decodes to a dot;
 * - `#`: a fragment has no place in a request target, and apps disagree on where it ends.
 * No webhook sender needs any of these in a callback path; the query is not checked (it cannot move the path).
 * @example pathRefusal('/hooks/v1') // null
 * @example pathRefusal('/a/%2e%2E/admin') // 'a dot segment'
 */
export function pathRefusal(path: string): string | null {
  if (path === '') return null;
  if (/[\\;#]/.test(path)) return path.includes('\\') ? 'a backslash' : path.includes(';') ? 'a path parameter (`;`)' : 'a fragment (`#`)';
  if (/[^\x21-\x7e]/.test(path)) return 'a control or non-ASCII character';
  if (/%u[0-9A-Fa-f]{4}/.test(path)) return 'a %u escape';
  for (const match of path.matchAll(/%([0-9A-Fa-f]{2})/g)) {
    const byte = Number.parseInt(match[1]!, 16);
    if (byte === 0x2f || byte === 0x5c) return 'an encoded slash or backslash';
    if (byte === 0x3b) return 'a path parameter (`;`)';
    if (byte === 0x25) return 'a double percent-encoding (`%25`)';
    if (byte < 0x20 || byte >= 0x7f) return 'an encoded control or non-ASCII character';
  }
  for (const segment of path.split('/')) {
    const decoded = segment.replace(/%2e/gi, '.');
    if (decoded === '.' || decoded === '..') return 'a dot segment';
  }
  return null;
}
