// Redaction for the request journal: no API key, webhook secret, bearer token or admin token
// ever appears in what the journal keeps or answers. Three nets, because any one alone misses something:
// members named like a secret (`api_key`, `webhook_secret`, `access_token`, `sig`) lose their value
// whatever it is; strings are scanned for the shapes of this service's secrets (`sk_…`, `whsec_…`, a JWT,
// `Bearer …`); and the exact secrets the service knows of (its keys, webhook secrets, admin token) are cut
// out wherever they occur, even where nothing else would spot them (a key chosen by the user, pasted into
// a prompt).
//
// A text is scanned once, left to right, and at each character the known secrets are
// looked up by their first characters in a hash map (`SecretIndex`), so the cost is the text's length
// whatever the number of keys ever made; and a scan stops once it has made as much as the caller keeps.

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';
/** Known secrets shorter than this are not searched for: a 3-character "secret" would blank out prose. */
export const MIN_SECRET_LENGTH = 8;
/** Nesting past this depth is not walked (the API's bodies nest 4 levels; JSON bodies are refused past 32). */
export const MAX_REDACT_DEPTH = 32;

/** A member name that holds a credential, compared without case, `-` or `_`. */
const SECRET_NAME = /(?:secret|token|password|passwd|apikey|authorization|cookie|signature|verifier)$|^sig$/;
// The shapes, tried only where a word starts (`\b`), each anchored there (sticky).
// This service's API keys, webhook secrets and admin token (accounts.ts: sk_ and whsec_, service.ts: adm_, then base64url).
const PREFIXED = /(sk|whsec|adm)_[A-Za-z0-9_-]{6,}/y;
// An OAuth access token of the assistant endpoint: a JWT (three base64url parts, the first `eyJ`).
const JWT = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/y;
// An Authorization header value copied into text.
const AUTHORIZATION = /(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/iy;

/** Whether a member of this name holds a credential: its value is replaced whatever it is. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/**
 * The secrets to cut out wherever they occur, in named groups (an API key's token and webhook secrets,
 * the admin token) that their owner replaces as they change. A text is searched for them with one hash
 * lookup per character (by the secret's first `MIN_SECRET_LENGTH` characters) and one per distinct length
 * under that prefix, never one per secret.
 * @example
 * const secrets = new SecretIndex();
 * secrets.set('key_1', ['my-own-chosen-key-0123', 'my-own-signing-secret']);
 * createRedactor(secrets).text('key my-own-chosen-key-0123') // 'key [redacted]'
 */
export class SecretIndex {
  /** Each secret held, and how many groups hold it. */
  readonly #counts = new Map<string, number>();
  /** For each first `MIN_SECRET_LENGTH` characters: the lengths of the secrets that start so, longest first, each with its count. */
  readonly #lengths = new Map<string, Array<[length: number, count: number]>>();
  readonly #groups = new Map<string, string[]>();
  /**
   * The first two characters of the prefixes held (as one number), with how many prefixes start so: a place
   * whose two characters start none is passed with one lookup and no substring (so the journal records
   * cheaply; a prompt's characters rarely start a secret).
   */
  readonly #pairs = new Map<number, number>();
  #lookups = 0;
  #longest = 0;

  /** Distinct secrets held. */
  get size(): number {
    return this.#counts.size;
  }

  /** Hash lookups made by every search so far: what a test counts to see that the cost does not grow with the secrets held. */
  get lookups(): number {
    return this.#lookups;
  }

  /** Makes `secrets` the group's (replacing what it held); strings under `MIN_SECRET_LENGTH` characters and non-strings are left out. */
  set(group: string, secrets: Iterable<unknown>): void {
    this.delete(group);
    const kept = [...new Set([...secrets].filter((secret): secret is string => typeof secret === 'string' && secret.length >= MIN_SECRET_LENGTH))];
    if (kept.length === 0) return;
    this.#groups.set(group, kept);
    for (const secret of kept) this.#add(secret);
  }

  /** Forgets a group's secrets (those another group holds stay). */
  delete(group: string): boolean {
    const held = this.#groups.get(group);
    if (!held) return false;
    this.#groups.delete(group);
    for (const secret of held) this.#remove(secret);
    return true;
  }

  /** The groups held, for an owner that reconciles them. */
  groups(): IterableIterator<string> {
    return this.#groups.keys();
  }

  /** At least the length of the longest secret held (it does not shrink as secrets go, until none is left). */
  get longest(): number {
    return this.#longest;
  }

  has(secret: string): boolean {
    return this.#counts.has(secret);
  }

  /** The longest secret held that starts at `index` of `text`. */
  at(text: string, index: number): string | undefined {
    if (this.#counts.size === 0 || index + MIN_SECRET_LENGTH > text.length) return undefined;
    this.#lookups++;
    if (!this.#pairs.has(pairOf(text, index))) return undefined;
    this.#lookups++;
    const lengths = this.#lengths.get(text.slice(index, index + MIN_SECRET_LENGTH));
    if (!lengths) return undefined;
    for (const [length] of lengths) {
      if (index + length > text.length) continue;
      this.#lookups++;
      const candidate = text.slice(index, index + length);
      if (this.#counts.has(candidate)) return candidate;
    }
    return undefined;
  }

  #add(secret: string): void {
    const count = this.#counts.get(secret) ?? 0;
    this.#counts.set(secret, count + 1);
    if (count > 0) return;
    this.#longest = Math.max(this.#longest, secret.length);
    const prefix = secret.slice(0, MIN_SECRET_LENGTH);
    const lengths = this.#lengths.get(prefix) ?? [];
    const same = lengths.find(([length]) => length === secret.length);
    if (same) same[1]++;
    else {
      lengths.push([secret.length, 1]);
      lengths.sort((a, b) => b[0] - a[0]);
    }
    if (!this.#lengths.has(prefix)) this.#pairs.set(pairOf(prefix, 0), (this.#pairs.get(pairOf(prefix, 0)) ?? 0) + 1);
    this.#lengths.set(prefix, lengths);
  }

  #remove(secret: string): void {
    const count = this.#counts.get(secret) ?? 0;
    if (count > 1) return void this.#counts.set(secret, count - 1);
    this.#counts.delete(secret);
    if (this.#counts.size === 0) this.#longest = 0;
    const prefix = secret.slice(0, MIN_SECRET_LENGTH);
    const lengths = (this.#lengths.get(prefix) ?? []).filter((entry) => entry[0] !== secret.length || --entry[1] > 0);
    if (lengths.length === 0) {
      this.#lengths.delete(prefix);
      const pair = pairOf(prefix, 0);
      const left = (this.#pairs.get(pair) ?? 1) - 1;
      if (left === 0) this.#pairs.delete(pair);
      else this.#pairs.set(pair, left);
    } else this.#lengths.set(prefix, lengths);
  }
}

/** Redacts strings and JSON values against a set of known secrets. */
export interface Redactor {
  /**
   * `text` with every known secret and every secret-shaped run replaced. With `maxChars`, the scan stops
   * once it has made more than `maxChars` characters: the answer is then longer than `maxChars` (cut it
   * there), and nothing past the scan was read.
   */
  text(text: string, maxChars?: number): string;
  /**
   * A copy of a JSON value with secret-named members replaced and every string (member names too)
   * redacted; anything that is not JSON becomes its nearest JSON (a Date its ISO string, a function nothing).
   * With `maxChars`, the walk stops once it has made more than `maxChars` characters of names and values:
   * the copy's JSON is then longer than `maxChars`, and its first `maxChars` are those of the whole copy.
   */
  value(value: unknown, maxChars?: number): unknown;
}

/** The two characters of `text` at `index` as one number (UTF-16 code units). */
function pairOf(text: string, index: number): number {
  return text.charCodeAt(index) * 0x10000 + text.charCodeAt(index + 1);
}

/** `[A-Za-z0-9_]`: what `\b` counts as a word character. */
function isWord(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;
}

/** `[A-Za-z0-9_-]`: a base64url character. */
function isBase64url(code: number): boolean {
  return isWord(code) || code === 45;
}

/**
 * A redactor for these known secrets: a live `SecretIndex`, or a list (each at least `MIN_SECRET_LENGTH`
 * characters; shorter ones are ignored).
 * @example createRedactor(['sk_live_0123456789abcdef']).text('key sk_live_0123456789abcdef') // 'key [redacted]'
 */
export function createRedactor(secrets: SecretIndex | Iterable<string> = []): Redactor {
  let index: SecretIndex;
  if (secrets instanceof SecretIndex) index = secrets;
  else {
    index = new SecretIndex();
    index.set('secrets', secrets);
  }

  /** The shape that starts at `i` (a word start): where it ends and what replaces it. */
  const shapeAt = (input: string, i: number, jwtFrom: number): { end: number; replacement: string } | 'jwt failed' | undefined => {
    const code = input.charCodeAt(i);
    if (code === 115 || code === 119 || code === 97) {
      PREFIXED.lastIndex = i;
      const match = PREFIXED.exec(input);
      if (match) return { end: PREFIXED.lastIndex, replacement: `${match[1]}_${REDACTED}` };
    }
    if (code === 101 && i >= jwtFrom) {
      JWT.lastIndex = i;
      if (JWT.test(input)) return { end: JWT.lastIndex, replacement: REDACTED };
      return 'jwt failed';
    }
    if (code === 66 || code === 98) {
      AUTHORIZATION.lastIndex = i;
      const match = AUTHORIZATION.exec(input);
      if (match) return { end: AUTHORIZATION.lastIndex, replacement: `${match[1]} ${REDACTED}` };
    }
    return undefined;
  };

  const text = (input: string, maxChars = Infinity): string => {
    let out = '';
    let from = 0;
    // A JWT that failed at a word start fails at every later one of the same base64url
    // run (they share its end), so they are not tried again: `eyJ-eyJ-…` costs its length, not its square.
    let jwtFrom = 0;
    let i = 0;
    while (i < input.length && out.length + (i - from) <= maxChars) {
      let end = -1;
      let replacement = REDACTED;
      const known = index.at(input, i);
      if (known !== undefined) end = i + known.length;
      else if (i === 0 || !isWord(input.charCodeAt(i - 1))) {
        const shape = shapeAt(input, i, jwtFrom);
        if (shape === 'jwt failed') {
          jwtFrom = i + 1;
          while (jwtFrom < input.length && isBase64url(input.charCodeAt(jwtFrom))) jwtFrom++;
        } else if (shape) ({ end, replacement } = shape);
      }
      if (end === -1) {
        i++;
        continue;
      }
      out += input.slice(from, i);
      // A known secret that starts inside what is replaced and runs past it is replaced with it (only
      // the last `longest` places can start one, so a long shape costs no lookups).
      let covered = end;
      if (out.length + replacement.length <= maxChars) {
        for (let k = Math.max(i + 1, end - index.longest + 1); k < covered; k++) {
          const inner = index.at(input, k);
          if (inner !== undefined && k + inner.length > covered) covered = k + inner.length;
        }
      }
      out += covered > end ? `${replacement}${REDACTED}` : replacement;
      i = from = covered;
    }
    return out + input.slice(from, i);
  };

  const value = (input: unknown, maxChars = Infinity): unknown => {
    // Characters made so far, never more than the copy's JSON holds (quotes, commas and brackets are not counted).
    let made = 0;
    const walk = (item: unknown, depth: number): unknown => {
      if (typeof item === 'string') {
        const kept = text(item, maxChars - made);
        made += kept.length;
        return kept;
      }
      if (item === null || typeof item === 'boolean') {
        made += String(item).length;
        return item;
      }
      if (typeof item === 'number') {
        made += Number.isFinite(item) ? String(item).length : 4;
        return item;
      }
      if (typeof item === 'bigint') return walk(item.toString(), depth);
      if (typeof item !== 'object') return undefined;
      if (item instanceof Date) return Number.isNaN(item.getTime()) ? walk(null, depth) : walk(item.toISOString(), depth);
      if (depth >= MAX_REDACT_DEPTH) return walk('[too deep]', depth);
      if (ArrayBuffer.isView(item)) return walk(`<${item.byteLength} bytes>`, depth);
      if (Array.isArray(item)) {
        const out: unknown[] = [];
        for (let i = 0; i < item.length && made <= maxChars; i++) out.push(walk(item[i], depth + 1) ?? walk(null, depth));
        return out;
      }
      // Object.fromEntries defines members, so a `__proto__` member of a parsed body stays a member.
      const entries: Array<[string, unknown]> = [];
      for (const name of Object.keys(item)) {
        if (made > maxChars) break;
        const before = made;
        const kept = text(name, maxChars - made);
        made += kept.length;
        const member = isSecretName(name) ? walk(REDACTED, depth) : walk((item as Record<string, unknown>)[name], depth + 1);
        if (member === undefined) made = before;
        else entries.push([kept, member]);
      }
      return Object.fromEntries(entries);
    };
    return walk(input, 0);
  };

  return { text, value };
}
