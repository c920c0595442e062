import { JOURNAL_CAP } from './contract/test-helpers.js';
import type { SecretIndex } from './redact.js';
import type { JournalEntry } from './contract/helper-types.js';

// What the request journal (journal.ts) takes and answers, and the bounds of what it keeps.
// Apart from the journal itself so that module stays one concern: keeping and finding entries.

export { JOURNAL_CAP };
/** Entries kept of one account, so no other's requests wipe them. */
export const JOURNAL_ACCOUNT_CAP = JOURNAL_CAP;
/** Entries kept of requests that named no valid key (no key, a refused one, a public route), apart from every account's. */
export const JOURNAL_KEYLESS_CAP = JOURNAL_CAP;
/** Entries kept of the admin token's requests, apart from the key-less ones and every account's. */
export const JOURNAL_ADMIN_CAP = JOURNAL_CAP;
/** Entries kept of every account together; past it the oldest of any account goes. */
export const JOURNAL_TOTAL_CAP = 4 * JOURNAL_CAP;
/** The longest request body kept, in characters of its JSON; a longer one is kept as its first characters. */
export const MAX_BODY_CHARS = 4096;
/** The longest path kept. */
export const MAX_PATH_CHARS = 1024;
/** The most characters of query names and values kept, all together; each value is cut to 256. */
export const MAX_QUERY_CHARS = 1024;
/** Each query value kept is cut to this many characters. */
export const MAX_QUERY_VALUE_CHARS = 256;
/** Each query name kept is cut to this many characters. */
export const MAX_QUERY_NAME_CHARS = 64;
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

/** An entry as the journal keeps and answers it (GET /test_helpers/requests; deeply frozen): the published type. */
export type { JournalEntry };

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
