import { ServiceError } from '../../contract/problems.js';
import type { Caller } from '../../core/gate.js';
import { pathFilterProblem } from '../../testing/journal-filter.js';
import type { JournalFilter, RequestJournal } from '../../testing/journal.js';

/**
 * The request journal's helpers, without HTTP: `GET` and `DELETE /test_helpers/requests`. The
 * admin token (`caller` null) reads and clears every account's entries, or one account's with `account`;
 * an API key only its own account's.
 */
export class RequestJournalCommands {
  readonly #journal: RequestJournal;

  constructor(journal: RequestJournal) {
    this.#journal = journal;
  }

  /** The matching entries, newest first. */
  list(caller: Caller | null, filter: JournalFilter) {
    // The filter is bounded, so what it costs is bounded too.
    const problem = filter.path === undefined ? null : pathFilterProblem(filter.path);
    if (problem) throw new ServiceError('invalid_parameter', problem, { extra: { parameter: 'path' } });
    return { data: this.#journal.list({ ...filter, account: scope(caller, filter.account) }) };
  }

  /** Clears the entries in scope; answers how many went. */
  clear(caller: Caller | null, { account }: { account?: number | undefined }) {
    return { deleted: this.#journal.clear({ account: scope(caller, account) }) };
  }
}

/** The account whose entries a caller reaches: the admin's choice (all without one), a key's own. */
function scope(caller: Caller | null, account: number | undefined): number | undefined {
  if (caller === null) return account;
  if (account !== undefined && account !== caller.account.id) {
    throw new ServiceError('invalid_parameter', `An API key reaches its own account's entries (${caller.account.id}) only; use the admin token for account ${account}.`, { extra: { parameter: 'account' } });
  }
  return caller.account.id;
}
