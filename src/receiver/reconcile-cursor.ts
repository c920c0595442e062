// Where a Node receiver keeps reconciliation's cursor — beside its delivery store, so it
// lasts as long as what the dedupe remembers: a file beside the deliveries file, a key in the same Redis,
// or memory for the memory store and any store of the user's.
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { DeliveryStore } from './delivery-store.js';
import { FileDeliveryStore } from './file-delivery-store.js';
import { memoryCursorFor, type ReconcileCursor } from './reconcile.js';
import { RedisDeliveryStore } from './redis-delivery-store.js';

/** The Redis mark holding the cursor (`<prefix>mark:reconcile`, or `<prefix>mark:reconcile:<namespace>`). */
const MARK = 'reconcile';

/**
 * The cursor kept beside `store`, one per `namespace` (checked by the receiver: no '/' or ':'): without
 * one, `<file>.reconcile.json` or the mark `reconcile`; in one, `<file>.<namespace>.reconcile.json` or
 * the mark `reconcile:<namespace>`.
 */
export function cursorFor(store: DeliveryStore, namespace?: string): ReconcileCursor {
  if (store instanceof FileDeliveryStore) return new FileCursor(namespace === undefined ? `${store.file}.reconcile.json` : `${store.file}.${namespace}.reconcile.json`);
  if (store instanceof RedisDeliveryStore) {
    const mark = namespace === undefined ? MARK : `${MARK}:${namespace}`;
    return { read: () => store.readMark(mark), advance: (to) => store.raiseMark(mark, to) };
  }
  return memoryCursorFor(store, namespace);
}

/** Temporary files of this process, numbered: two receivers sharing a store write the same cursor file. */
let temps = 0;

/**
 * `{ "version": 1, "cursor": "<ISO 8601>" }`, replaced whole (write, then rename) so a crash leaves the old
 * or the new. A file that cannot be read as one counts as no cursor: the run starts 24 hours back, and
 * what it finds again are duplicates.
 */
export class FileCursor implements ReconcileCursor {
  readonly file: string;
  constructor(file: string) {
    this.file = file;
  }

  async read(): Promise<number | null> {
    let text;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    let at = NaN;
    try {
      at = Date.parse((JSON.parse(text) as { cursor?: unknown }).cursor as string);
    } catch {
      // Torn or edited by hand: treated as absent below.
    }
    if (Number.isNaN(at)) {
      process.emitWarning(`${this.file} is not a cliphook reconcile cursor ({ "version": 1, "cursor": "<ISO time>" }); reconciling as if it were absent.`, { code: 'CLIPHOOK_CURSOR_IGNORED' });
      return null;
    }
    return at;
  }

  async advance(to: number): Promise<void> {
    const at = await this.read();
    if (at !== null && at >= to) return;
    const temp = `${this.file}.${process.pid}-${++temps}.tmp`;
    await writeFile(temp, `${JSON.stringify({ version: 1, cursor: new Date(to).toISOString() })}\n`);
    await rename(temp, this.file);
  }
}
