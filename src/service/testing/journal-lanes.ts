// Issue 29 item 5: where the request journal keeps its entries. One ring for everyone let 1,000 requests
// without a key wipe every account's history; here each account has a lane of its own, requests that
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
export interface JournalLaneCaps {
  /** Entries of one account. */
  account: number;
  /** Entries of requests that named no valid key. */
  keyless: number;
  /** Entries of the admin token's requests (issue 29 follow-up item 4). @default keyless */
  admin?: number;
  /** Entries of every account together. */
  total: number;
}

/**
 * Entries by account, newest first, bounded per account, in total, and apart for requests without an
 * account. Every operation costs the entries it touches (linked lists), never the accounts or entries held.
 */
export class JournalLanes<E> {
  readonly caps: Readonly<JournalLaneCaps>;
  readonly #lanes = new Map<number, Lane<E>>();
  #keyless: Lane<E> = { account: null, oldest: null, newest: null, size: 0 };
  /** Issue 29 follow-up item 4: the admin token's requests, in a lane of their own, so a flood of key-less ones leaves them. */
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
