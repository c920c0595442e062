import type { Row, Table } from './table.js';

// How the service store takes back what one command changed when its write failed: each
// change of a row is kept as the row's JSON before and after it, and undone newest first, in place, onto
// the row as it is now, so what others changed since (a refund, a clip's transition) stands.

/** One change a command made: the row's JSON before (`null`: it was created) and after (`null`: removed). */
export interface Change {
  table: string;
  id: number | string;
  before: string | null;
  after: string | null;
}

/** What one command (an HTTP request) changed, and whether one of its writes failed. */
export interface Unit {
  /** Changes made while this is true belong to the command; after it ends they are someone else's. */
  open: boolean;
  /** A commit failed while some of its changes were not on disk: it is taken back when it ends. */
  failed: boolean;
  changes: Change[];
  /** The journal sequence number of its last change: on disk once the store's durable mark passes it. */
  lastSeq: number;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether two JSON values are the same value (object keys in any order). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key]));
}

/**
 * Undoes, in `live`, the change from `before` to `after`, field by field: a field still as the change left
 * it goes back to its value before; a number someone moved since moves back by the change's own amount
 * (a balance keeps a refund made after the charge it undoes); an object is undone inside; any other field
 * changed since keeps its newer value.
 */
export function revertInPlace(live: Record<string, unknown>, before: Record<string, unknown>, after: Record<string, unknown>): void {
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const was = before[key];
    const became = after[key];
    if (sameJson(was, became)) continue;
    const now = live[key];
    if (sameJson(now, became)) {
      if (was === undefined) delete live[key];
      else live[key] = structuredClone(was as Json);
    } else if (typeof now === 'number' && typeof was === 'number' && typeof became === 'number') {
      live[key] = now - (became - was);
    } else if (isObject(now) && isObject(was) && isObject(became)) {
      revertInPlace(now, was, became);
    }
  }
}

/** Undoes `changes`, newest first, onto the tables' rows as they are now (journalled as new changes). */
export function undoChanges(changes: readonly Change[], tableOf: (name: string) => Table<Row>): void {
  for (const { table: name, id, before, after } of [...changes].reverse()) {
    const table = tableOf(name);
    const live = table.get(id);
    if (after === null) {
      // It removed the row: back it comes, unless someone made it again since.
      if (!live && before !== null) table.restore(JSON.parse(before) as Row);
    } else if (before === null) {
      // It made the row.
      if (live) table.remove(id);
    } else if (live) {
      revertInPlace(live as unknown as Record<string, unknown>, JSON.parse(before) as Record<string, unknown>, JSON.parse(after) as Record<string, unknown>);
      table.restore(live);
    }
  }
}
