// How long a file inbox keeps its finished records: done ones by `keepDone`/`keepDoneMs`, dead ones by
// `keepDead`/`keepDeadMs`. Pending and running records are never here, so never dropped. No Node module.
import type { InboxRecord } from './record.js';

export interface RetentionOptions {
  keepDone: number;
  keepDoneMs: number;
  /** @default Infinity */
  keepDead?: number;
  /** @default Infinity */
  keepDeadMs?: number;
  /** Told of each dead record dropped: an event that never ran to the end leaves a trace. */
  onDropped?: (record: InboxRecord) => void;
}

type Finished = 'dead' | 'done';

/** The dead and done records in the order they finished, oldest first, and which of them to drop. */
export class Retention {
  readonly #finished: Record<Finished, Map<string, InboxRecord>> = { dead: new Map(), done: new Map() };
  readonly #keep: Record<Finished, { count: number; ms: number }>;
  readonly #drop: (record: InboxRecord) => void;
  readonly #onDropped: (record: InboxRecord) => void;

  /** `drop` forgets the record (and writes that it did); it must call `delete`. */
  constructor({ keepDone, keepDoneMs, keepDead = Infinity, keepDeadMs = Infinity, onDropped = () => undefined }: RetentionOptions, drop: (record: InboxRecord) => void) {
    this.#keep = { dead: { count: keepDead, ms: keepDeadMs }, done: { count: keepDone, ms: keepDoneMs } };
    this.#drop = drop;
    this.#onDropped = onDropped;
  }

  /** Records read at open, in any order. */
  load(records: readonly InboxRecord[]): void {
    for (const record of [...records].sort((a, b) => (a.finishedAt ?? 0) - (b.finishedAt ?? 0))) this.add(record);
  }

  /** A record that has just become dead or done. */
  add(record: InboxRecord): void {
    if (record.state === 'dead' || record.state === 'done') this.#finished[record.state].set(record.id, record);
  }

  /** A record leaving dead or done (a replay, a purge). */
  delete(record: InboxRecord): void {
    this.#finished.dead.delete(record.id);
    this.#finished.done.delete(record.id);
  }

  /** Drops what is past its count or age, oldest first; answers how many. */
  trim(now: number): number {
    let dropped = 0;
    for (const state of ['dead', 'done'] as const) {
      const finished = this.#finished[state];
      const { count, ms } = this.#keep[state];
      const cutoff = now - ms;
      for (const record of finished.values()) {
        if (finished.size <= count && (record.finishedAt ?? 0) > cutoff) break;
        if (state === 'dead') this.#onDropped({ ...record, keys: [...record.keys] });
        this.#drop(record);
        finished.delete(record.id);
        dropped++;
      }
    }
    return dropped;
  }
}
