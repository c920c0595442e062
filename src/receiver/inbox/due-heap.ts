/**
 * A min-heap of (due time, id), ties in insertion order: the file inbox's pending records, so taking the
 * next due one costs O(log n) however many wait: a request's cost stays independent of history.
 * Entries are never removed from the middle; the owner skips a popped entry whose record has moved on.
 */
export class DueHeap {
  readonly #at: number[] = [];
  readonly #seq: number[] = [];
  readonly #ids: string[] = [];
  #next = 0;

  get size(): number {
    return this.#ids.length;
  }

  push(at: number, id: string): void {
    this.#at.push(at);
    this.#seq.push(this.#next++);
    this.#ids.push(id);
    this.#up(this.#ids.length - 1);
  }

  /** The earliest due time, or `undefined` when empty. */
  peekAt(): number | undefined {
    return this.#at[0];
  }

  peekId(): string | undefined {
    return this.#ids[0];
  }

  pop(): void {
    const last = this.#ids.length - 1;
    if (last < 0) return;
    this.#swap(0, last);
    this.#at.pop();
    this.#seq.pop();
    this.#ids.pop();
    this.#down(0);
  }

  #less(i: number, j: number): boolean {
    const a = this.#at[i]!;
    const b = this.#at[j]!;
    return a < b || (a === b && this.#seq[i]! < this.#seq[j]!);
  }

  #swap(i: number, j: number): void {
    // Plain moves, not destructuring swaps: those allocate an array each.
    const at = this.#at[i]!;
    this.#at[i] = this.#at[j]!;
    this.#at[j] = at;
    const seq = this.#seq[i]!;
    this.#seq[i] = this.#seq[j]!;
    this.#seq[j] = seq;
    const id = this.#ids[i]!;
    this.#ids[i] = this.#ids[j]!;
    this.#ids[j] = id;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#ids.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < n && this.#less(left, least)) least = left;
      if (right < n && this.#less(right, least)) least = right;
      if (least === i) return;
      this.#swap(i, least);
      i = least;
    }
  }
}
