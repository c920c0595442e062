// Redaction for the request journal (issue 22): no API key, webhook secret, bearer token or admin token
// ever appears in what the journal keeps or answers. Three nets, because any one alone misses something:
// members named like a secret (`api_key`, `webhook_secret`, `access_token`, `sig`) lose their value
// whatever it is; strings are scanned for the shapes of this service's secrets (`sk_…`, `whsec_…`, a JWT,
// `Bearer …`); and the exact secrets the service knows of (its keys, webhook secrets, admin token) are cut
// out wherever they occur, even where nothing else would spot them (a key chosen by the user, pasted into
// a prompt).

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';
/** Known secrets shorter than this are not searched for: a 3-character "secret" would blank out prose. */
export const MIN_SECRET_LENGTH = 8;
/** Nesting past this depth is not walked (the API's bodies nest 4 levels; JSON bodies are refused past 32). */
export const MAX_REDACT_DEPTH = 32;

/** A member name that holds a credential, compared without case, `-` or `_`. */
const SECRET_NAME = /(?:secret|token|password|passwd|apikey|authorization|cookie|signature|verifier)$|^sig$/;
const SHAPES: ReadonlyArray<[RegExp, string]> = [
  // This service's API keys, webhook secrets and admin token (accounts.ts: sk_ and whsec_, service.ts: adm_, then base64url).
  [/\b(sk|whsec|adm)_[A-Za-z0-9_-]{6,}/g, `$1_${REDACTED}`],
  // An OAuth access token of the assistant endpoint: a JWT (three base64url parts, the first `eyJ`).
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, REDACTED],
  // An Authorization header value copied into text.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`],
];

/** Whether a member of this name holds a credential: its value is replaced whatever it is. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** Redacts strings and JSON values against a set of known secrets. */
export interface Redactor {
  /** `text` with every known secret and every secret-shaped run replaced. */
  text(text: string): string;
  /**
   * A copy of a JSON value with secret-named members replaced and every string (member names too)
   * redacted; anything that is not JSON becomes its nearest JSON (a Date its ISO string, a function nothing).
   */
  value(value: unknown): unknown;
}

/**
 * A redactor for these known secrets (each at least `MIN_SECRET_LENGTH` characters; shorter ones are ignored).
 * @example createRedactor(['sk_live_0123456789abcdef']).text('key sk_live_0123456789abcdef') // 'key [redacted]'
 */
export function createRedactor(secrets: Iterable<string> = []): Redactor {
  // Longest first, so a secret that contains another is cut out whole.
  const known = [...new Set([...secrets].filter((secret) => typeof secret === 'string' && secret.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
  const text = (input: string): string => {
    let out = input;
    for (const secret of known) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
    for (const [shape, replacement] of SHAPES) out = out.replace(shape, replacement);
    return out;
  };
  const value = (input: unknown, depth = 0): unknown => {
    if (typeof input === 'string') return text(input);
    if (input === null || typeof input === 'number' || typeof input === 'boolean') return input;
    if (typeof input === 'bigint') return input.toString();
    if (typeof input !== 'object') return undefined;
    if (input instanceof Date) return Number.isNaN(input.getTime()) ? null : input.toISOString();
    if (depth >= MAX_REDACT_DEPTH) return '[too deep]';
    if (Array.isArray(input)) return input.map((item) => value(item, depth + 1) ?? null);
    if (ArrayBuffer.isView(input)) return `<${input.byteLength} bytes>`;
    // Object.fromEntries defines members, so a `__proto__` member of a parsed body stays a member.
    const entries: Array<[string, unknown]> = [];
    for (const [name, member] of Object.entries(input)) {
      const kept = isSecretName(name) ? REDACTED : value(member, depth + 1);
      if (kept !== undefined) entries.push([text(name), kept]);
    }
    return Object.fromEntries(entries);
  };
  return { text, value: (input) => value(input) };
}
