import { destinationOf } from './destination.js';
import { RecordHeap } from './record-heap.js';
import { DueTimer } from './queue.js';
import type { DeliveryRecord, EmitterClock } from './types.js';

/** Where a destination's lane stands: nothing queued, waiting for its head's time, in the turn, or at its cap. */
type Place = 'idle' | 'waiting' | 'turn' | 'full';

/** The deliveries of one destination, and its attempts in flight. */
interface Lane<Queued extends DeliveryRecord> {
  readonly key: string;
  readonly heap: RecordHeap<Queued>;
  running: number;
  place: Place;
  /** Bumped whenever the lane enters the turn: an older entry of it in the turn is stale. */
  ticket: number;
  /** While waiting: its slot in the wait list, and the time it waits for. */
  slot: number;
  at: number;
  /** Order of arrival in the wait list, for ties. */
  seq: number;
}

/**
 * The pending deliveries, shared out fairly across destinations (a URL's origin): each destination has
 * its own queue by `nextAttemptAt`, holds at most `perDestination` attempts at once, and the destinations
 * with a due delivery take turns, one delivery each, so a backlog of thousands for one never delays
 * another's by more than a turn. One timer is armed, for the earliest destination waiting for its time.
 */
export class FairQueue<Queued extends DeliveryRecord = DeliveryRecord> {
  readonly #perDestination: number;
  readonly #timer: DueTimer;
  readonly #lanes = new Map<string, Lane<Queued>>();
  /** Destinations with a due delivery and room for an attempt, in turn order (a queue from `#turnHead`). */
  #turn: { lane: Lane<Queued>; ticket: number }[] = [];
  #turnHead = 0;
  /** Destinations waiting for their earliest delivery's time: a min-heap by `at`, then by arrival. */
  readonly #waiting: Lane<Queued>[] = [];
  #seq = 0;
  #size = 0;

  /** `onDue` runs when a waiting destination's earliest delivery is due; it pops what it can take. */
  constructor(clock: EmitterClock, onDue: () => void, perDestination: number) {
    this.#timer = new DueTimer(clock, onDue);
    this.#perDestination = perDestination;
  }

  /** Deliveries queued, across every destination. */
  get size(): number {
    return this.#size;
  }

  /** Adds a delivery known not to be queued. */
  add(record: Queued): void {
    const key = destinationOf(record.url);
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { key, heap: new RecordHeap<Queued>(), running: 0, place: 'idle', ticket: 0, slot: -1, at: 0, seq: 0 };
      this.#lanes.set(key, lane);
    }
    lane.heap.add(record);
    this.#size++;
    this.#settle(lane);
  }

  /** Removes a delivery if it is queued. */
  remove(record: Queued): void {
    const lane = this.#lanes.get(destinationOf(record.url));
    if (!lane?.heap.remove(record)) return;
    this.#size--;
    this.#settle(lane);
  }

  /**
   * Takes the next due delivery in the destinations' turn, and counts it as an attempt of its destination
   * until `release()`; `undefined` when no destination with room has one due at `now`.
   */
  popDue(now: number): Queued | undefined {
    this.#wake(now);
    while (this.#turnHead < this.#turn.length) {
      const { lane, ticket } = this.#turn[this.#turnHead]!;
      this.#turn[this.#turnHead++] = undefined as unknown as { lane: Lane<Queued>; ticket: number };
      if (lane.ticket !== ticket || lane.place !== 'turn') continue;
      const record = lane.heap.peek();
      lane.place = 'idle';
      if (record === undefined || timeOf(record) > now) {
        this.#settle(lane);
        continue;
      }
      lane.heap.pop();
      this.#size--;
      lane.running++;
      // Still due and with room: to the back of the turn, behind every other destination.
      const next = lane.heap.peek();
      if (next !== undefined && timeOf(next) <= now && lane.running < this.#perDestination) this.#enterTurn(lane);
      else this.#settle(lane);
      this.#compactTurn();
      return record;
    }
    this.#turn = [];
    this.#turnHead = 0;
    return undefined;
  }

  /** Ends the attempt of a delivery `popDue()` gave: its destination has room again. */
  release(record: Queued): void {
    const key = destinationOf(record.url);
    const lane = this.#lanes.get(key);
    if (!lane) return;
    lane.running--;
    if (lane.place === 'full') lane.place = 'idle';
    this.#settle(lane);
  }

  /** Arms the one timer for the earliest waiting destination, or clears it when none waits. */
  arm(): void {
    this.#timer.armAt(this.#waiting[0]?.at ?? null);
  }

  disarm(): void {
    this.#timer.disarm();
  }

  /**
   * Puts a lane where it belongs after a change: out of everything when empty, aside at its cap, else in
   * the wait list for its earliest delivery (a lane in the turn stays there: `popDue()` checks it).
   */
  #settle(lane: Lane<Queued>): void {
    const head = lane.heap.peek();
    if (head === undefined || lane.running >= this.#perDestination) {
      if (lane.place === 'waiting') this.#removeWaiting(lane);
      lane.place = head === undefined ? 'idle' : 'full';
      if (head === undefined && lane.running === 0) this.#lanes.delete(lane.key);
      return;
    }
    if (lane.place === 'turn') return;
    if (lane.place === 'waiting') {
      if (lane.at !== timeOf(head)) this.#updateWaiting(lane, timeOf(head));
      return;
    }
    lane.place = 'waiting';
    lane.seq = ++this.#seq;
    lane.at = timeOf(head);
    lane.slot = this.#waiting.length;
    this.#waiting.push(lane);
    this.#up(lane.slot);
  }

  #enterTurn(lane: Lane<Queued>): void {
    lane.place = 'turn';
    this.#turn.push({ lane, ticket: ++lane.ticket });
  }

  /** Moves every waiting destination whose earliest delivery is due into the turn, earliest first. */
  #wake(now: number): void {
    for (let top = this.#waiting[0]; top !== undefined && top.at <= now; top = this.#waiting[0]) {
      this.#removeWaiting(top);
      this.#enterTurn(top);
    }
  }

  #compactTurn(): void {
    if (this.#turnHead > 1024 && this.#turnHead * 2 > this.#turn.length) {
      this.#turn = this.#turn.slice(this.#turnHead);
      this.#turnHead = 0;
    }
  }

  #updateWaiting(lane: Lane<Queued>, at: number): void {
    lane.at = at;
    this.#down(this.#up(lane.slot));
  }

  #removeWaiting(lane: Lane<Queued>): void {
    const heap = this.#waiting;
    const last = heap.pop()!;
    if (last !== lane) {
      heap[lane.slot] = last;
      last.slot = lane.slot;
      this.#down(this.#up(lane.slot));
    }
    lane.slot = -1;
  }

  #up(slot: number): number {
    const heap = this.#waiting;
    const lane = heap[slot]!;
    while (slot > 0) {
      const parent = (slot - 1) >> 1;
      if (!earlier(lane, heap[parent]!)) break;
      this.#put(heap[parent]!, slot);
      slot = parent;
    }
    this.#put(lane, slot);
    return slot;
  }

  #down(slot: number): void {
    const heap = this.#waiting;
    const lane = heap[slot]!;
    const half = heap.length >> 1;
    while (slot < half) {
      let child = 2 * slot + 1;
      if (child + 1 < heap.length && earlier(heap[child + 1]!, heap[child]!)) child++;
      if (!earlier(heap[child]!, lane)) break;
      this.#put(heap[child]!, slot);
      slot = child;
    }
    this.#put(lane, slot);
  }

  #put(lane: Lane<Queued>, slot: number): void {
    this.#waiting[slot] = lane;
    lane.slot = slot;
  }
}

function timeOf(record: DeliveryRecord): number {
  return record.nextAttemptAt ?? 0;
}

function earlier(a: Lane<DeliveryRecord>, b: Lane<DeliveryRecord>): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
