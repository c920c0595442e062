// The inspector's exchanges in memory (exchanges.ts says what one is): a book bounded by count and by
// bytes, that forgets the oldest first and finds the newest by event and outcome. A finished exchange is
// kept as its record: its log line, made here once, and a few primitives (fewer live objects for the collector).
import { LineSlabs } from './exchange-line.js';
import { ExchangeRecord, outcomeOf, type HeldExchange, type Outcome } from './exchanges.js';

export interface ExchangeFilter {
  event?: string | undefined;
  outcome?: Outcome | undefined;
}

/** What a record holds besides its line: the object, its strings, the view of its slab. */
export const RECORD_ALLOWANCE = 256;

/**
 * Bytes an exchange holds, for the total bound: a record's line (its bodies in base64, its headers) and an
 * allowance; one still waiting for its reply, its bodies and a rough allowance for its headers.
 */
function weight(exchange: HeldExchange): number {
  if (exchange instanceof ExchangeRecord) return exchange.line.length + RECORD_ALLOWANCE;
  let bytes = 512 + exchange.request.body.bytes.length + (exchange.reply?.body.bytes.length ?? 0);
  for (const text of exchange.request.headers) bytes += text.length;
  for (const text of exchange.reply?.headers ?? []) bytes += text.length;
  return bytes;
}

/**
 * The exchanges in memory, oldest first, bounded twice: at most `maxEvents`, and at most `maxTotalBytes`
 * (of log lines, or bodies and headers while the reply has not come); the oldest go first. Ids only grow.
 */
export class ExchangeBook {
  /** Where finished exchanges' lines are made, or `null` to keep them as they are (`lines: false`). */
  readonly #slabs: LineSlabs | null;
  /**
   * The ids held, in order, from `#head` on, each one's exchange and weight at the same index: ids only
   * grow and the oldest go first, so arrays find one by its id (a binary search) and the oldest without a
   * hash (a map of ids, and a second one of weights, would cost hashing and now and then a rehash on
   * every put; walking a map from its oldest steps over every entry deleted since its last rehash).
   */
  #ids: number[] = [];
  #items: Array<HeldExchange | undefined> = [];
  #weights: number[] = [];
  #head = 0;
  readonly #maxEvents: number;
  readonly #maxTotalBytes: number;
  #bytes = 0;
  #nextId = 1;

  /**
   * `lines: false` keeps finished exchanges as objects: without a log their lines would be made for the
   * book alone, which costs more CPU than the objects' heap saves (11-12 us per event in process
   * against 7-8, and 15-21 % of `listen`'s CPU against 6-11 %).
   */
  constructor({ maxEvents, maxTotalBytes, lines = true }: { maxEvents: number; maxTotalBytes: number; lines?: boolean }) {
    this.#maxEvents = maxEvents;
    this.#maxTotalBytes = maxTotalBytes;
    this.#slabs = lines ? new LineSlabs() : null;
  }

  get size(): number {
    return this.#ids.length - this.#head;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** The id the next exchange gets. */
  nextId(): number {
    return this.#nextId++;
  }

  /**
   * Adds (or replaces, once its reply came) an exchange, then forgets the oldest past either bound. A
   * finished one is kept as its record, its line made now (unless `lines: false`): what to hand the log.
   */
  put(item: HeldExchange): HeldExchange {
    const exchange = item instanceof ExchangeRecord || item.reply === null || this.#slabs === null ? item : new ExchangeRecord(item, this.#slabs.line(item));
    const { id } = exchange;
    const bytes = weight(exchange);
    const found = this.#find(id);
    if (found >= 0) {
      this.#bytes -= this.#weights[found]!;
      this.#items[found] = exchange;
      this.#weights[found] = bytes;
    } else if (~found === this.#ids.length) {
      this.#ids.push(id);
      this.#items.push(exchange);
      this.#weights.push(bytes);
    } else {
      // Older than the newest held (not how ids come): in its place.
      this.#ids.splice(~found, 0, id);
      this.#items.splice(~found, 0, exchange);
      this.#weights.splice(~found, 0, bytes);
    }
    this.#bytes += bytes;
    if (id >= this.#nextId) this.#nextId = id + 1;
    while (this.size > this.#maxEvents || this.#bytes > this.#maxTotalBytes) {
      if (this.#ids[this.#head] === id) break; // the newest one stays, whatever it weighs
      this.#dropOldest();
    }
    return exchange;
  }

  get(id: number): HeldExchange | undefined {
    const found = this.#find(id);
    return found >= 0 ? this.#items[found] : undefined;
  }

  /** The oldest id still held, or `null`. */
  get oldest(): number | null {
    return this.#ids[this.#head] ?? null;
  }

  /** Exchanges oldest first, filtered. */
  list({ event, outcome }: ExchangeFilter = {}): HeldExchange[] {
    const found: HeldExchange[] = [];
    const items = this.#items;
    for (let i = this.#head; i < items.length; i++) {
      const exchange = items[i]!;
      if (event !== undefined && exchange.eventName !== event) continue;
      if (outcome !== undefined && (exchange instanceof ExchangeRecord ? exchange.outcome : outcomeOf(exchange)) !== outcome) continue;
      found.push(exchange);
    }
    return found;
  }

  /** The index of `id`, or `~index` of where it would go. The newest are looked for most: tried first. */
  #find(id: number): number {
    const ids = this.#ids;
    let low = this.#head;
    let high = ids.length - 1;
    if (high < low || ids[high]! < id) return ~ids.length;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const at = ids[middle]!;
      if (at === id) return middle;
      if (at < id) low = middle + 1;
      else high = middle - 1;
    }
    return ~low;
  }

  #dropOldest(): void {
    const at = this.#head++;
    this.#bytes -= this.#weights[at]!;
    this.#items[at] = undefined;
    // Now and then, the dropped slots go (the arrays do not shift one by one).
    if (this.#head > 1024 && this.#head * 2 > this.#ids.length) {
      this.#ids = this.#ids.slice(this.#head);
      this.#items = this.#items.slice(this.#head);
      this.#weights = this.#weights.slice(this.#head);
      this.#head = 0;
    }
  }
}
