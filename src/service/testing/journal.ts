import { JOURNAL_CAP } from './contract/test-helpers.js';
import { pathFilterProblem, pathMatches, pathSegments } from './journal-filter.js';
import { JournalLanes } from './journal-lanes.js';
import { createRedactor, isSecretName, REDACTED, SecretIndex, type Redactor } from './redact.js';

// The request journal of issue 22 (WireMock's, for this service): what each request sent and what it was
// answered, newest first, so a test can ask "did my app send the same Idempotency-Key when it retried
// after a 503?". Bounded: each account's entries apart from every other's (journal-lanes.ts), each entry
// cut to fixed sizes, and redacted before it is kept (redact.ts), so no secret is ever stored, let alone
// answered.

export { JOURNAL_CAP };
export { MAX_PATH_FILTER_CHARS, MAX_PATH_FILTER_SEGMENTS } from './journal-filter.js';
/** Entries kept of one account (issue 29 item 5). */
export const JOURNAL_ACCOUNT_CAP = JOURNAL_CAP;
/** Entries kept of requests that named no valid key (no key, a refused one, a public route), apart from every account's. */
export const JOURNAL_KEYLESS_CAP = JOURNAL_CAP;
/** Entries kept of the admin token's requests, apart from the key-less ones and every account's (issue 29 follow-up item 4). */
export const JOURNAL_ADMIN_CAP = JOURNAL_CAP;
/** Entries kept of every account together; past it the oldest of any account goes. */
export const JOURNAL_TOTAL_CAP = 4 * JOURNAL_CAP;
/** The longest request body kept, in characters of its JSON; a longer one is kept as its first characters. */
export const MAX_BODY_CHARS = 4096;
/** The longest path kept. */
export const MAX_PATH_CHARS = 1024;
/** The most characters of query names and values kept, all together; each value is cut to 256. */
export const MAX_QUERY_CHARS = 1024;
const MAX_QUERY_VALUE_CHARS = 256;
const MAX_QUERY_NAME_CHARS = 64;
/** Spec 4.1 allows 255 characters; a longer (invalid) key is cut. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 256;
/**
 * An upper bound on one entry's characters (its strings and the JSON of its body): with the default caps
 * (`JOURNAL_TOTAL_CAP` + `JOURNAL_KEYLESS_CAP` + `JOURNAL_ADMIN_CAP` entries), the journal holds at most about 42 million characters.
 */
export const MAX_ENTRY_CHARS = MAX_BODY_CHARS + MAX_PATH_CHARS + MAX_QUERY_CHARS + MAX_IDEMPOTENCY_KEY_CHARS + 512;

/** What the service's wiring records for one answered request. */
export interface JournalRecord {
  /** When it was answered, on the account's simulated clock (ms since the epoch). */
  at: number;
  account: number | null;
  keyId: string | null;
  /** The admin token was admitted (its request is kept in the admin's own lane). @default false */
  admin?: boolean;
  /** The operationId of the contract route, or null. */
  operation: string | null;
  method: string;
  path: string;
  query: Readonly<Record<string, string | readonly string[] | undefined>>;
  idempotencyKey: string | null;
  /** Answered from the stored answer of its Idempotency-Key. */
  replayed: boolean;
  status: number;
  /** The problem code of an error answer. */
  code: string | null;
  /** The request body: parsed JSON, text, bytes (kept as their count), or undefined for none. */
  body: unknown;
}

/** An entry as the journal keeps and answers it (GET /test_helpers/requests; deeply frozen). */
export interface JournalEntry {
  at: string;
  account: number | null;
  key_id: string | null;
  operation: string | null;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  idempotency_key: string | null;
  replayed: boolean;
  status: number;
  code: string | null;
  body: unknown;
  /** Something of the entry (body, path, query, Idempotency-Key) was cut to its bound. */
  truncated: boolean;
}

/** Which entries to answer (all given ones must match). */
export interface JournalFilter {
  method?: string | undefined;
  /** A path (`/v1/videos/7`) or a path template (`/v1/videos/{id}`), matched segment by segment (`pathMatches`); at most `MAX_PATH_FILTER_CHARS` characters and `MAX_PATH_FILTER_SEGMENTS` segments. */
  path?: string | undefined;
  operation?: string | undefined;
  /** A status (`404`) or a class (`'4xx'`). */
  status?: number | string | undefined;
  account?: number | undefined;
  /** How many, newest first. @default 100 */
  limit?: number | undefined;
}

/** Options of `RequestJournal`. */
export interface RequestJournalOptions {
  /** Entries kept of one account; its oldest goes past it. @default JOURNAL_ACCOUNT_CAP (1,000) */
  accountCap?: number;
  /** Entries kept of requests that named no valid key, which never evict an account's. @default JOURNAL_KEYLESS_CAP (1,000) */
  keylessCap?: number;
  /** Entries kept of the admin token's requests, which neither evict nor are evicted by any other. @default JOURNAL_ADMIN_CAP (1,000) */
  adminCap?: number;
  /** Entries kept of every account together; the oldest of any account goes past it. @default JOURNAL_TOTAL_CAP (4,000) */
  cap?: number;
  /**
   * The secrets to cut out of every entry wherever they occur, kept up to date by their owner (the service:
   * every key's token and webhook secrets, the one before a rotation too, and the admin token).
   * @default an empty index (only secret-named members and secret shapes are redacted)
   */
  secrets?: SecretIndex;
}

/**
 * A bounded journal of requests, newest first.
 * @example
 * const secrets = new SecretIndex();
 * secrets.set('admin', [adminToken]);
 * const journal = new RequestJournal({ secrets });
 * journal.record({ at: clock.now(), account: 1, keyId: 'key_a', operation: 'createVideo', method: 'POST', path: '/v1/videos', query: {}, idempotencyKey: 'k-1', replayed: false, status: 503, code: 'upstream_busy', body });
 * journal.list({ operation: 'createVideo' })[0].idempotency_key // 'k-1'
 */
export class RequestJournal {
  /** Entries kept of every account together. */
  readonly cap: number;
  readonly accountCap: number;
  readonly keylessCap: number;
  readonly adminCap: number;
  /** The known secrets every entry is redacted against (issue 29 item 2: looked up, never searched for one by one). */
  readonly secrets: SecretIndex;
  readonly #redactor: Redactor;
  readonly #lanes: JournalLanes<JournalEntry>;

  constructor({ accountCap = JOURNAL_ACCOUNT_CAP, keylessCap = JOURNAL_KEYLESS_CAP, adminCap = JOURNAL_ADMIN_CAP, cap = JOURNAL_TOTAL_CAP, secrets = new SecretIndex() }: RequestJournalOptions = {}) {
    for (const [name, value] of Object.entries({ accountCap, keylessCap, adminCap, cap })) {
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`Expected \`${name}\` to be a whole number >= 1, got ${value}.`);
    }
    if (!(secrets instanceof SecretIndex)) throw new TypeError('Expected `secrets` to be a SecretIndex of the secrets to redact.');
    this.cap = cap;
    this.accountCap = accountCap;
    this.keylessCap = keylessCap;
    this.adminCap = adminCap;
    this.secrets = secrets;
    this.#redactor = createRedactor(secrets);
    this.#lanes = new JournalLanes({ account: accountCap, keyless: keylessCap, admin: adminCap, total: cap });
  }

  /** Entries held now. */
  get size(): number {
    return this.#lanes.size;
  }

  /** Keeps one request, redacted and cut to its bounds; the oldest entry of its account (or of the admin's, or the key-less) goes when that is full. */
  record(request: JournalRecord): JournalEntry {
    const entry = deepFreeze(toEntry(request, this.#redactor));
    this.#lanes.push(request.admin === true && entry.account === null ? 'admin' : entry.account, entry);
    return entry;
  }

  /** The entries that match, newest first. A `path` filter past its bounds is a TypeError (`pathFilterProblem`). */
  list(filter: JournalFilter = {}): JournalEntry[] {
    const limit = Math.max(1, Math.min(filter.limit ?? 100, this.cap + this.keylessCap + this.adminCap));
    const matches = matcher(filter);
    const out: JournalEntry[] = [];
    for (const entry of this.#lanes.newest(filter.account)) {
      if (out.length >= limit) break;
      if (matches(entry)) out.push(entry);
    }
    return out;
  }

  /** Removes the entries of one account, or all; answers how many went. */
  clear({ account }: { account?: number | undefined } = {}): number {
    return this.#lanes.clear(account);
  }
}

/** `text` cut to `max` characters, never between the two halves of a surrogate pair. */
function cut(text: string, max: number): { text: string; cut: boolean } {
  if (text.length <= max) return { text, cut: false };
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return { text: text.slice(0, end), cut: true };
}

function toEntry(request: JournalRecord, redactor: Redactor): JournalEntry {
  let truncated = false;
  const bounded = (text: string, max: number) => {
    const result = cut(redactor.text(text, max), max);
    truncated ||= result.cut;
    return result.text;
  };
  const query: Array<[string, string | string[]]> = [];
  let budget = MAX_QUERY_CHARS;
  for (const [rawName, raw] of Object.entries(request.query)) {
    if (raw === undefined) continue;
    const name = bounded(rawName, MAX_QUERY_NAME_CHARS);
    const values = (typeof raw === 'string' ? [raw] : [...raw]).map((value) => (isSecretName(rawName) ? REDACTED : bounded(value, MAX_QUERY_VALUE_CHARS)));
    const size = name.length + values.reduce((sum, value) => sum + value.length, 0);
    if (size > budget) {
      truncated = true;
      break;
    }
    budget -= size;
    query.push([name, typeof raw === 'string' ? values[0]! : values]);
  }
  const body = bodyOf(request.body, redactor);
  truncated ||= body.cut;
  return {
    at: new Date(request.at).toISOString(),
    account: request.account,
    key_id: request.keyId,
    operation: request.operation,
    method: request.method.toUpperCase().slice(0, 16),
    path: bounded(request.path, MAX_PATH_CHARS),
    query: Object.fromEntries(query),
    idempotency_key: request.idempotencyKey === null ? null : bounded(request.idempotencyKey, MAX_IDEMPOTENCY_KEY_CHARS),
    replayed: request.replayed,
    status: request.status,
    code: request.code,
    body: body.value,
    truncated,
  };
}

/**
 * The body as kept: redacted first (so no secret survives a cut), then its JSON cut to `MAX_BODY_CHARS`.
 * Issue 29 item 2: only what can be kept is walked and scanned, however large the body.
 */
function bodyOf(body: unknown, redactor: Redactor): { value: unknown; cut: boolean } {
  if (body === undefined || body === null) return { value: null, cut: false };
  if (typeof body === 'string') {
    const result = cut(redactor.text(body, MAX_BODY_CHARS), MAX_BODY_CHARS);
    return { value: result.text, cut: result.cut };
  }
  const value = redactor.value(body, MAX_BODY_CHARS) ?? null;
  const text = JSON.stringify(value);
  if (text.length <= MAX_BODY_CHARS) return { value, cut: false };
  return { value: cut(text, MAX_BODY_CHARS).text, cut: true };
}

function matcher(filter: JournalFilter): (entry: JournalEntry) => boolean {
  const method = filter.method?.toUpperCase();
  const problem = filter.path === undefined ? null : pathFilterProblem(filter.path);
  if (problem) throw new TypeError(`Expected a \`path\` filter within its bounds: ${problem}`);
  const path = filter.path === undefined ? undefined : pathSegments(filter.path);
  const status = filter.status === undefined ? undefined : String(filter.status);
  const statusClass = status?.endsWith('xx') ? status[0] : undefined;
  return (entry) =>
    (method === undefined || entry.method === method) &&
    (path === undefined || pathMatches(path, entry.path)) &&
    (filter.operation === undefined || entry.operation === filter.operation) &&
    (status === undefined || (statusClass ? String(entry.status)[0] === statusClass : String(entry.status) === status)) &&
    (filter.account === undefined || entry.account === filter.account);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
