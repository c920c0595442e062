// The simulated clock's lanes (clock.ts): the service's own time and each account's, each with how
// far it is ahead of the service's and its pending timers, in a binary min-heap by (at, seq), so the earliest
// fires first and timers due at the same instant fire in the order they were set. The clock moves time and
// arms the real timer; this module only keeps what is pending where.

/** One pending timer of a `SimulatedClock`. */
export interface Timer {
  /** When it fires, on its lane's time. */
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
  /** The account whose time it runs on (`null`: the service's own). */
  readonly lane: number | null;
  cancelled: boolean;
}

/** The earliest pending timer, dropping cancelled ones that surface. */
export function peek(heap: Timer[]): Timer | undefined {
  while (heap.length > 0 && heap[0]!.cancelled) pop(heap);
  return heap[0];
}

/** Adds a timer. */
export function push(heap: Timer[], timer: Timer): void {
  // The new timer rises through a hole: no swap (a destructuring swap allocates an array per level).
  let i = heap.length;
  heap.push(timer);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const above = heap[parent]!;
    if (!before(timer, above)) break;
    heap[i] = above;
    i = parent;
  }
  heap[i] = timer;
}

/** Removes and returns the earliest timer, cancelled or not. */
export function pop(heap: Timer[]): Timer | undefined {
  const top = heap[0];
  const last = heap.pop();
  const size = heap.length;
  if (size === 0 || last === undefined) return top;
  // The last timer sinks from the root through a hole.
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= size) break;
    const right = left + 1;
    const child = right < size && before(heap[right]!, heap[left]!) ? right : left;
    const below = heap[child]!;
    if (!before(below, last)) break;
    heap[i] = below;
    i = child;
  }
  heap[i] = last;
  return top;
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** An account's own time: how far it is ahead of the service's, and its timers. */
export interface Lane {
  lead: number;
  /** Pending timers in a binary min-heap by (at, seq); cancelled ones are dropped when they surface. */
  readonly heap: Timer[];
}

/** The service's own lane (`null`, lead 0) and each account's that was ever given a lead or a timer. */
export class Lanes {
  readonly #lanes = new Map<number | null, Lane>([[null, { lead: 0, heap: [] }]]);
  /** The accounts whose time an `advance()` is moving now: their lanes are kept even while empty. */
  readonly moving = new Set<number>();

  /** `account`'s lane, made when it has none. */
  of(account: number | null): Lane {
    let lane = this.#lanes.get(account);
    if (!lane) this.#lanes.set(account, (lane = { lead: 0, heap: [] }));
    return lane;
  }

  leadOf(account: number | null): number {
    return account === null ? 0 : (this.#lanes.get(account)?.lead ?? 0);
  }

  /** The accounts whose time is ahead of the service's, and by how much. */
  leads(): Map<number, number> {
    const leads = new Map<number, number>();
    for (const [account, lane] of this.#lanes) if (account !== null && lane.lead > 0) leads.set(account, lane.lead);
    return leads;
  }

  /** Timers waiting to fire, of `account` or of every lane. */
  pending(account?: number): number {
    let count = 0;
    for (const [id, lane] of this.#lanes) if (account === undefined || id === account) for (const timer of lane.heap) if (!timer.cancelled) count++;
    return count;
  }

  /** Drops an account's lane; its pending timers never fire. Whether it had one. */
  forget(account: number): boolean {
    const lane = this.#lanes.get(account);
    if (!lane) return false;
    for (const timer of lane.heap) timer.cancelled = true;
    this.#lanes.delete(account);
    return true;
  }

  /** Every account's lead back to 0, or one account's. */
  clearLeads(account?: number): void {
    for (const [id, lane] of this.#lanes) if (id !== null && (account === undefined || id === account)) lane.lead = 0;
  }

  /** Drops every pending timer (the clock stopped). */
  clear(): void {
    for (const lane of this.#lanes.values()) lane.heap.length = 0;
  }

  /** The earliest pending timer of any lane, and when it is due on the service's time. */
  earliest(): { lane: Lane; timer: Timer; due: number } | undefined {
    let best: { lane: Lane; timer: Timer; due: number } | undefined;
    for (const [account, lane] of this.#lanes) {
      const timer = peek(lane.heap);
      if (!timer) {
        // An account at the service's time with nothing pending costs nothing to keep track of.
        if (account !== null && lane.lead === 0 && !this.moving.has(account)) this.#lanes.delete(account);
        continue;
      }
      const due = timer.at - lane.lead;
      if (!best || due < best.due || (due === best.due && timer.seq < best.timer.seq)) best = { lane, timer, due };
    }
    return best;
  }
}
