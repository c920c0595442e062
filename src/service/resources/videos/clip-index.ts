import type { Table } from '../../core/store.js';

// Issue 29 follow-up (clip index): GET /v1/videos and GET /v1/account read every account's clips to find
// the caller's. This index makes each account's clips a lookup; `VideoLifecycle` keeps it in step with the
// rows (a clip made, a clip deleted) and rebuilds it when rows change beside it (a rollback, an account
// deleted, a reset); a data file loaded is read at construction. A lookup checks the row, so an entry left
// stale answers nothing.

/** What the index reads of a clip (lifecycle.ts's `Video`; named here so this module imports nothing of it). */
export interface IndexedClip {
  id: number;
  accountId: number;
}

/** Each account's clip ids, over the `video` table. */
export class ClipIndex<Clip extends IndexedClip> {
  readonly #clips: Table<Clip>;
  readonly #byAccount = new Map<number, Set<number>>();

  constructor(clips: Table<Clip>) {
    this.#clips = clips;
    this.rebuild();
  }

  /** The account's clips, in the order they were filed (oldest first, but for a rebuild's table order). */
  of(accountId: number): Clip[] {
    const clips: Clip[] = [];
    for (const id of this.#byAccount.get(accountId) ?? []) {
      const clip = this.#clips.get(id);
      if (clip?.accountId === accountId) clips.push(clip);
    }
    return clips;
  }

  /** Files a clip under its account (a new clip). */
  add(clip: Clip): void {
    let ids = this.#byAccount.get(clip.accountId);
    if (!ids) this.#byAccount.set(clip.accountId, (ids = new Set()));
    ids.add(clip.id);
  }

  /** Forgets a clip (its row is being removed). */
  drop(clip: Clip): void {
    const ids = this.#byAccount.get(clip.accountId);
    if (!ids) return;
    ids.delete(clip.id);
    if (ids.size === 0) this.#byAccount.delete(clip.accountId);
  }

  /** Made again from the rows: after rows changed beside the clips. Its cost is the rows'; it runs on those rare paths only. */
  rebuild(): void {
    this.#byAccount.clear();
    for (const clip of this.#clips.values()) this.add(clip);
  }
}
