import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
// The module's own timer, not the global one: a user's fake timers (vi.useFakeTimers, sinon) replace
// the globals, and `runAllTimers()` would then spin forever on this heartbeat.
import { setInterval as heartbeat, clearInterval as stopHeartbeat, setTimeout as waitFor } from 'node:timers';
import { FileLockedError, type LockHolder } from '../protocol/errors.js';
import { place, procStat, running, samePlace, type Place, type ProcessMark } from './process-identity.js';

/** How often a held lock's mtime is touched, so processes on other machines can tell it is alive. */
export const LOCK_REFRESH_MS = 10_000;
/** A lock from another machine (or container) untouched for this long is taken over: its holder died or hung. */
export const LOCK_STALE_MS = 30_000;
/** How long `acquire` waits for another process's takeover of a stale lock before giving up. */
const TAKEOVER_WAIT_MS = 1_000;

/** The time a waiting `acquireWithin` reads and waits on. */
export interface WaitClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
}

/** Node's own timers, out of a test's fake ones (see the heartbeat's import). */
export const realClock: WaitClock = { now: () => Date.now(), setTimeout: (callback, ms) => waitFor(callback, ms) };

/** What a lock's heartbeat repeats on: Node's own interval timer, or a test's hand. */
export interface HeartbeatTimers {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Node's interval, unref'd (a held lock never keeps the process alive), out of a test's fake timers. */
const realHeartbeat: HeartbeatTimers = {
  setInterval: (callback, ms) => heartbeat(callback, ms).unref(),
  clearInterval: (handle) => stopHeartbeat(handle as NodeJS.Timeout),
};

/** `FileLock.acquire(file, what, options)`. */
export interface FileLockOptions {
  /** How often the lock's mtime is touched. @default LOCK_REFRESH_MS (10 s) */
  refreshMs?: number;
  /** What the heartbeat repeats on; a test passes its own to beat by hand. @default Node's setInterval, unref'd */
  timers?: HeartbeatTimers;
}

interface LockFileBody extends Place, ProcessMark {
  /** Tells this lock from a later one at the same path. */
  token: string;
}

/** Locks held by this process, released by one `exit` listener rather than one listener each. */
const held = new Set<FileLock>();
let exitHook = false;

/**
 * One process's claim on a data file, as `<file>.lock` beside it: created exclusively, holding the
 * holder's pid and where it runs, its mtime touched every 10 s, removed on `release()` and at process
 * exit (not when a signal kills the process). Another process that finds it held gets a
 * `FileLockedError`. A lock is taken over, so a crash never needs a hand to clean up, when it is stale:
 * on the same machine and pid namespace, once its process is gone or a zombie (a paused process still
 * holds it);
 * from elsewhere, once it has not been touched for 30 s. Only the process holding `<file>.lock.takeover`
 * may remove a stale lock, and it looks again first, so two processes finding the same stale lock
 * cannot both end up holding the file.
 */
export class FileLock {
  readonly path: string;
  readonly #body: LockFileBody;
  readonly #timers: HeartbeatTimers;
  readonly #timer: unknown;
  #released = false;
  #warned = false;

  private constructor(path: string, body: LockFileBody, refreshMs: number, timers: HeartbeatTimers) {
    this.path = path;
    this.#body = body;
    this.#timers = timers;
    this.#timer = timers.setInterval(() => this.#refresh(), refreshMs);
    held.add(this);
    if (!exitHook) {
      exitHook = true;
      process.once('exit', () => {
        for (const lock of held) lock.release();
      });
    }
  }

  /**
   * Takes `<file>.lock` for this process, or throws `FileLockedError` naming the live holder.
   * `what` names the kind of store in the error, where it reads "one <what> per file" (`'FileDeliveryStore'`,
   * `'receiver inbox'`).
   */
  static acquire(file: string, what: string, { refreshMs = LOCK_REFRESH_MS, timers = realHeartbeat }: FileLockOptions = {}): FileLock {
    if (!(Number.isFinite(refreshMs) && refreshMs > 0)) throw new TypeError(`Expected \`refreshMs\` to be a positive number, got ${refreshMs}.`);
    if (typeof timers?.setInterval !== 'function' || typeof timers.clearInterval !== 'function') {
      throw new TypeError('Expected `timers` to have setInterval(callback, ms) and clearInterval(handle).');
    }
    const path = `${file}.lock`;
    // 0700 as JsonFile makes it: the folder may also hold outboxes with signing secrets.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const body: LockFileBody = {
      pid: process.pid,
      ...place(),
      started: procStat(process.pid)?.started ?? null,
      since: new Date().toISOString(),
      token: randomUUID(),
    };
    const text = `${JSON.stringify(body)}\n`;
    const giveUpAt = Date.now() + TAKEOVER_WAIT_MS;
    for (;;) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        try {
          writeSync(fd, text);
        } finally {
          closeSync(fd);
        }
        return new FileLock(path, body, refreshMs, timers);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const found = inspect(path);
      if (found === 'gone') continue;
      if (!found.stale || Date.now() > giveUpAt) throw new FileLockedError(resolve(file), what, found.holder, Date.now());
      if (!removeIfStale(path)) sleep(5); // another process is taking it over: see who wins
    }
  }

  /**
   * Like `acquire`, but waits while another live process holds the lock, trying again every `pollMs`,
   * and throws its `FileLockedError` once `waitMs` have passed: for locks held a moment per write.
   */
  static async acquireWithin(
    file: string,
    what: string,
    { waitMs, pollMs = 20, clock = realClock }: { waitMs: number; pollMs?: number; clock?: WaitClock },
  ): Promise<FileLock> {
    const giveUpAt = clock.now() + waitMs;
    for (;;) {
      try {
        return FileLock.acquire(file, what);
      } catch (error) {
        if (!(error instanceof FileLockedError) || clock.now() >= giveUpAt) throw error;
      }
      await new Promise<void>((resolve) => clock.setTimeout(resolve, Math.min(pollMs, Math.max(1, giveUpAt - clock.now()))));
    }
  }

  /**
   * Throws `FileLockedError` naming the holder when a live process holds `<file>.lock`, as `acquire` does,
   * but takes nothing: no lock is written, and a stale one is left where it is. For a reader that only reads.
   */
  static assertFree(file: string, what: string): void {
    const found = inspect(`${file}.lock`);
    if (found !== 'gone' && !found.stale) throw new FileLockedError(resolve(file), what, found.holder, Date.now());
  }

  /** Removes the lock file if it is still this lock's; safe to call more than once. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    held.delete(this);
    this.#timers.clearInterval(this.#timer);
    if (readBody(this.path)?.token !== this.#body.token) return;
    try {
      unlinkSync(this.path);
    } catch {
      // Already gone: nothing to release.
    }
  }

  #refresh(): void {
    if (this.#released) return;
    const now = new Date();
    try {
      if (readBody(this.path)?.token !== this.#body.token) throw new Error('taken over');
      utimesSync(this.path, now, now);
    } catch {
      // Another machine found the lock untouched for 30 s (this process's event loop stalled?), or
      // someone removed it: both processes may now write the file. Say so once.
      if (this.#warned) return;
      this.#warned = true;
      process.emitWarning(`The lock ${this.path} is no longer this process's: another process may be writing the same file.`, {
        code: 'CLIPHOOK_LOCK_LOST',
      });
    }
  }
}

/**
 * Removes the lock at `path` if it is still stale, holding `<path>.takeover` while it looks and removes.
 * Returns false when another process holds the takeover (a guard left by a crash is cleared once old).
 */
function removeIfStale(path: string): boolean {
  const guard = `${path}.takeover`;
  try {
    closeSync(openSync(guard, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    try {
      if (Date.now() - statSync(guard).mtimeMs > LOCK_STALE_MS) unlinkSync(guard);
    } catch {
      // Gone meanwhile: the next round takes it.
    }
    return false;
  }
  try {
    const again = inspect(path);
    if (again !== 'gone' && again.stale) unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  } finally {
    unlinkSync(guard);
  }
  return true;
}

/** What the lock file at `path` says, and whether it may be taken over; `'gone'` if it vanished. */
function inspect(path: string): { holder: LockHolder | null; stale: boolean } | 'gone' {
  let mtimeMs;
  try {
    mtimeMs = statSync(path).mtimeMs;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw error;
  }
  const body = readBody(path);
  const untouched = Date.now() - mtimeMs > LOCK_STALE_MS;
  // An unreadable body is a holder between its create and its write, or a crash in between: held
  // until old.
  if (!body) return { holder: null, stale: untouched };
  const holder: LockHolder = { pid: body.pid, hostname: body.hostname, since: body.since, touchedAt: new Date(mtimeMs).toISOString() };
  // Elsewhere, only the heartbeat tells; here, the pid does (a paused process keeps its lock).
  if (!samePlace(body, place())) return { holder, stale: untouched };
  return { holder, stale: !running(body) };
}

function readBody(path: string): LockFileBody | null {
  try {
    const body = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockFileBody> | null;
    if (typeof body?.pid !== 'number' || typeof body.hostname !== 'string' || typeof body.token !== 'string') return null;
    return {
      pid: body.pid,
      hostname: body.hostname,
      boot: typeof body.boot === 'string' ? body.boot : null,
      pidNamespace: typeof body.pidNamespace === 'string' ? body.pidNamespace : null,
      started: typeof body.started === 'number' ? body.started : null,
      since: String(body.since),
      token: body.token,
    };
  } catch {
    return null;
  }
}

/** Blocks this thread for `ms`: only while another process finishes a takeover, a few milliseconds. */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
