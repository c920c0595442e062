import { pathFilterProblem, pathMatches, pathSegments } from './journal-filter.js';
import {
  JOURNAL_ACCOUNT_CAP, JOURNAL_ADMIN_CAP, JOURNAL_KEYLESS_CAP, JOURNAL_TOTAL_CAP, MAX_BODY_CHARS, MAX_IDEMPOTENCY_KEY_CHARS, MAX_PATH_CHARS, MAX_QUERY_CHARS,
  MAX_QUERY_NAME_CHARS, MAX_QUERY_VALUE_CHARS, type JournalEntry, type JournalFilter, type JournalRecord, type RequestJournalOptions,
} from './journal-types.js';
import { createRedactor, isSecretName, REDACTED, SecretIndex, type Redactor } from './redact.js';

// The request journal (WireMock's, for this service): what each request sent and what it was
// answered, newest first, so a test can ask "did my app send the same Idempotency-Key when it retried
// after a 503?". Bounded: each account's entries apart from every other's (the lanes below), each entry
// cut to fixed sizes, and redacted before it is kept (redact.ts), so no secret is ever stored, let alone
// answered.

export * from './journal-types.js';
export { MAX_PATH_FILTER_CHARS, MAX_PATH_FILTER_SEGMENTS } from './journal-filter.js';

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
  /** The known secrets every entry is redacted against: looked up, never searched for one by one. */
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
    const entry = frozen(toEntry(request, this.#redactor));
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
 * Only what can be kept is walked and scanned, however large the body.
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

/**
 * An entry frozen whole: its own members are strings, numbers and its query; only its body nests, so freezing
 * it is not a walk of every member.
 */
function frozen(entry: JournalEntry): JournalEntry {
  for (const value of Object.values(entry.query)) if (Array.isArray(value)) Object.freeze(value);
  Object.freeze(entry.query);
  deepFreeze(entry.body);
  return Object.freeze(entry);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

// Where the request journal keeps its entries. One ring for everyone would let 1,000 requests without a
// key wipe every account's history, so each account has a lane of its own, requests that
// named no valid key have theirs, and only accounts' entries count towards the total of accounts.

/** One entry held: in its lane's order and, for an account's, in the order of every account's. */
interface Node<E> {
  readonly entry: E;
  readonly seq: number;
  readonly lane: Lane<E>;
  older: Node<E> | null;
  newer: Node<E> | null;
  /** Among every account's entries (not used by the key-less lane). */
  allOlder: Node<E> | null;
  allNewer: Node<E> | null;
}

interface Lane<E> {
  readonly account: number | null;
  oldest: Node<E> | null;
  newest: Node<E> | null;
  size: number;
}

/** How many entries `JournalLanes` keeps. */
interface JournalLaneCaps {
  /** Entries of one account. */
  account: number;
  /** Entries of requests that named no valid key. */
  keyless: number;
  /** Entries of the admin token's requests. @default keyless */
  admin?: number;
  /** Entries of every account together. */
  total: number;
}

/**
 * Entries by account, newest first, bounded per account, in total, and apart for requests without an
 * account. Every operation costs the entries it touches (linked lists), never the accounts or entries held.
 */
class JournalLanes<E> {
  readonly caps: Readonly<JournalLaneCaps>;
  readonly #lanes = new Map<number, Lane<E>>();
  #keyless: Lane<E> = { account: null, oldest: null, newest: null, size: 0 };
  /** The admin token's requests, in a lane of their own, so a flood of key-less ones leaves them. */
  #admin: Lane<E> = { account: null, oldest: null, newest: null, size: 0 };
  /** The oldest and newest of every account's entries. */
  #allOldest: Node<E> | null = null;
  #allNewest: Node<E> | null = null;
  #accountEntries = 0;
  #seq = 0;

  constructor(caps: JournalLaneCaps) {
    this.caps = Object.freeze({ admin: caps.keyless, ...caps });
  }

  get size(): number {
    return this.#accountEntries + this.#keyless.size + this.#admin.size;
  }

  /**
   * Adds an entry (`'admin'`: a request of the admin token; `null`: one that named no valid key); the oldest
   * of its lane goes past the lane's bound, and the oldest of any account's past the total.
   */
  push(account: number | null | 'admin', entry: E): void {
    const lane = account === 'admin' ? this.#admin : account === null ? this.#keyless : this.#laneOf(account);
    const node: Node<E> = { entry, seq: this.#seq++, lane, older: lane.newest, newer: null, allOlder: null, allNewer: null };
    if (lane.newest) lane.newest.newer = node;
    else lane.oldest = node;
    lane.newest = node;
    lane.size++;
    if (lane.account !== null) {
      node.allOlder = this.#allNewest;
      if (this.#allNewest) this.#allNewest.allNewer = node;
      else this.#allOldest = node;
      this.#allNewest = node;
      this.#accountEntries++;
    }
    if (lane.size > (lane === this.#admin ? this.caps.admin! : lane === this.#keyless ? this.caps.keyless : this.caps.account)) this.#remove(lane.oldest!);
    if (this.#accountEntries > this.caps.total) this.#remove(this.#allOldest!);
  }

  /** The entries of one account, or of everyone (the key-less and admin lanes too), newest first. */
  *newest(account?: number): Generator<E> {
    if (account !== undefined) {
      for (let node = this.#lanes.get(account)?.newest ?? null; node; node = node.older) yield node.entry;
      return;
    }
    let accounts = this.#allNewest;
    let keyless = this.#keyless.newest;
    let admin = this.#admin.newest;
    for (;;) {
      const next = [accounts, keyless, admin].reduce<Node<E> | null>((best, node) => (node && (!best || node.seq > best.seq) ? node : best), null);
      if (!next) return;
      yield next.entry;
      if (next === accounts) accounts = accounts.allOlder;
      else if (next === keyless) keyless = keyless.older;
      else admin = next.older;
    }
  }

  /** Removes one account's entries, or all; answers how many went. */
  clear(account?: number): number {
    if (account === undefined) {
      const all = this.size;
      this.#lanes.clear();
      this.#keyless = { account: null, oldest: null, newest: null, size: 0 };
      this.#admin = { account: null, oldest: null, newest: null, size: 0 };
      this.#allOldest = this.#allNewest = null;
      this.#accountEntries = 0;
      return all;
    }
    const lane = this.#lanes.get(account);
    if (!lane) return 0;
    const gone = lane.size;
    while (lane.oldest) this.#remove(lane.oldest);
    return gone;
  }

  #laneOf(account: number): Lane<E> {
    let lane = this.#lanes.get(account);
    if (!lane) this.#lanes.set(account, (lane = { account, oldest: null, newest: null, size: 0 }));
    return lane;
  }

  #remove(node: Node<E>): void {
    const { lane } = node;
    if (node.older) node.older.newer = node.newer;
    else lane.oldest = node.newer;
    if (node.newer) node.newer.older = node.older;
    else lane.newest = node.older;
    lane.size--;
    if (lane.account === null) return;
    if (node.allOlder) node.allOlder.allNewer = node.allNewer;
    else this.#allOldest = node.allNewer;
    if (node.allNewer) node.allNewer.allOlder = node.allOlder;
    else this.#allNewest = node.allOlder;
    this.#accountEntries--;
    // An account's empty lane goes, so lanes never outnumber the entries held.
    if (lane.size === 0) this.#lanes.delete(lane.account);
  }
}
