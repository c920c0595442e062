// The pending timers of one of the simulated clock's lanes (clock.ts): a binary min-heap by (at, seq), so
// the earliest fires first and timers due at the same instant fire in the order they were set.

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
  heap.push(timer);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

/** Removes and returns the earliest timer, cancelled or not. */
export function pop(heap: Timer[]): Timer | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length > 0 && last) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
      if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
      if (least === i) break;
      [heap[i], heap[least]] = [heap[least]!, heap[i]!];
      i = least;
    }
  }
  return top;
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
