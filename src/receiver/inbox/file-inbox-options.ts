// The file inbox's options, and its Node defaults.
import type { RetryTimers } from '../../store/line-journal.js';
import type { InboxFileIo } from './file-inbox-load.js';
import type { InboxRecord } from './record.js';

export interface FileInboxOptions {
  /** The snapshot (a header line, then a record per line); its journal is `<file>.journal`, its lock `<file>.lock`. */
  file: string;
  /** `fdatasync` each group commit before the receiver answers. @default false */
  fsync?: boolean;
  /** Done records kept at most. */
  keepDone: number;
  /** Done records kept at most this long, in milliseconds. */
  keepDoneMs: number;
  /** Dead records kept at most; past it the oldest is dropped and reported to `onDropped`. @default Infinity */
  keepDead?: number;
  /** Dead records kept at most this long, in milliseconds. @default Infinity */
  keepDeadMs?: number;
  /** Told of each dead record the retention drops (never a pending or running one). */
  onDropped?: (record: InboxRecord) => void;
  /**
   * Handler runs an event gets (`retries + 1`): a record found `running` at open had its run ended by
   * the process's end, which counts; with this many runs it is dead rather than run again. Without it
   * (`cliphook inbox`), a record found running stays so, for the app's next start to decide.
   */
  maxAttempts?: number;
  /**
   * Only read: no lock is taken (a live holder is still refused with `FileLockedError`), nothing is
   * written, nothing found running is recovered, and every change throws. @default false
   */
  readOnly?: boolean;
  clock: () => number;
  /** Retries of a failed write wait on these. @default Node's setTimeout, unref'd */
  timers?: RetryTimers;
  /** @default node:fs */
  io?: InboxFileIo;
  /** Journal bytes before a compaction, at least (and at least the snapshot's size). @default 67_108_864 */
  compactAfterBytes?: number;
}

/** Node's timers, unref'd: a retry of a failed write never keeps the process alive. */
export const NODE_TIMERS: RetryTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** `inbox.onDeadDropped` by default: a Node warning, since a dead event is one the app never handled. */
export function warnDeadDropped(record: InboxRecord): void {
  const reason = record.lastError === null ? '' : ` (its last error: ${record.lastError})`;
  process.emitWarning(
    `The receiver inbox dropped dead event ${record.id} (${record.name}, delivery ${record.deliveryId}, received ${new Date(record.receivedAt).toISOString()})${reason}: past inbox.keepDead or inbox.keepDeadMs.`,
    { code: 'CLIPHOOK_INBOX_DEAD_DROPPED' },
  );
}
