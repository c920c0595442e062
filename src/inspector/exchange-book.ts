// The inspector's exchanges in memory (exchanges.ts says what one is): a book bounded by count and by
// bytes, that forgets the oldest first and finds the newest by event and outcome. A finished exchange is
// kept as its record: its log line, made here once, and a few primitives (issue 23).
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
  readonly #items = new Map<number, HeldExchange>();
  readonly #slabs = new LineSlabs();
  readonly #weights = new Map<number, number>();
  /**
   * Ids in the order they came, from `#head` on: the oldest without walking the map, whose iteration
   * steps over every entry deleted since its last rehash (issue 23: dropping the oldest one by one made
   * each `oldest` walk thousands of holes, twice per event).
   */
  #order: number[] = [];
  #head = 0;
  readonly #maxEvents: number;
  readonly #maxTotalBytes: number;
  #bytes = 0;
  #nextId = 1;

  constructor({ maxEvents, maxTotalBytes }: { maxEvents: number; maxTotalBytes: number }) {
    this.#maxEvents = maxEvents;
    this.#maxTotalBytes = maxTotalBytes;
  }

  get size(): number {
    return this.#items.size;
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
   * finished one is kept as its record, its line made now: the record is what to hand the log.
   */
  put(item: HeldExchange): HeldExchange {
    const exchange = item instanceof ExchangeRecord || item.reply === null ? item : new ExchangeRecord(item, this.#slabs.line(item));
    this.#bytes -= this.#weights.get(exchange.id) ?? 0;
    const bytes = weight(exchange);
    if (!this.#items.has(exchange.id)) this.#order.push(exchange.id);
    this.#items.set(exchange.id, exchange);
    this.#weights.set(exchange.id, bytes);
    this.#bytes += bytes;
    if (exchange.id >= this.#nextId) this.#nextId = exchange.id + 1;
    while (this.#items.size > this.#maxEvents || this.#bytes > this.#maxTotalBytes) {
      const id = this.oldest;
      if (id === null || id === exchange.id) break; // the newest one stays, whatever it weighs
      this.#drop(id);
    }
    return exchange;
  }

  get(id: number): HeldExchange | undefined {
    return this.#items.get(id);
  }

  /** The oldest id still held, or `null`. */
  get oldest(): number | null {
    const order = this.#order;
    while (this.#head < order.length && !this.#items.has(order[this.#head]!)) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > order.length) {
      this.#order = order.slice(this.#head);
      this.#head = 0;
    }
    return this.#order[this.#head] ?? null;
  }

  /** Exchanges oldest first, filtered. */
  list({ event, outcome }: ExchangeFilter = {}): HeldExchange[] {
    const found: HeldExchange[] = [];
    for (const exchange of this.#items.values()) {
      if (event !== undefined && exchange.eventName !== event) continue;
      if (outcome !== undefined && (exchange instanceof ExchangeRecord ? exchange.outcome : outcomeOf(exchange)) !== outcome) continue;
      found.push(exchange);
    }
    return found;
  }

  #drop(id: number): void {
    this.#bytes -= this.#weights.get(id) ?? 0;
    this.#weights.delete(id);
    this.#items.delete(id);
  }
}
