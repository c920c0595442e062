import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { FileLockedError, type LockHolder } from '../protocol/errors.js';

/** How often a held lock's mtime is touched, so other processes can tell it is alive. */
export const LOCK_REFRESH_MS = 10_000;
/** A lock untouched for this long is taken over: its holder died or hung, wherever it ran. */
export const LOCK_STALE_MS = 30_000;

interface LockFileBody extends LockHolder {
  /** Tells this lock from a later one at the same path. */
  token: string;
}

/** Locks held by this process, released by one `exit` listener rather than one listener each. */
const held = new Set<FileLock>();
let exitHook = false;

/**
 * One process's claim on a data file, as `<file>.lock` beside it: created exclusively, holding the
 * holder's pid and host, its mtime touched every 10 s, removed on `release()` or at process exit.
 * Another process that finds it fresh gets a `FileLockedError`; one that finds it stale (its pid
 * gone on this host, or untouched for 30 s) takes it over, so a crash never needs a hand to clean up.
 */
export class FileLock {
  readonly path: string;
  readonly #body: LockFileBody;
  readonly #timer: NodeJS.Timeout;
  #warned = false;

  private constructor(path: string, body: LockFileBody) {
    this.path = path;
    this.#body = body;
    this.#timer = setInterval(() => this.#refresh(), LOCK_REFRESH_MS);
    this.#timer.unref();
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
   * `what` names the kind of store in the error (`'FileDeliveryStore'`).
   */
  static acquire(file: string, what: string): FileLock {
    const path = `${file}.lock`;
    // 0700 as JsonFile makes it: the folder may also hold outboxes with signing secrets.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const body: LockFileBody = { pid: process.pid, hostname: hostname(), since: new Date().toISOString(), token: randomUUID() };
    const text = `${JSON.stringify(body)}\n`;
    // A stale lock is removed and the exclusive create tried again; a third loss means other processes
    // keep racing for the file, which is the same conflict as a live holder.
    for (let attempt = 0; ; attempt++) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        try {
          writeSync(fd, text);
        } finally {
          closeSync(fd);
        }
        return new FileLock(path, body);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const found = inspect(path);
      if (found === 'gone') continue;
      if (!found.stale || attempt >= 2) throw new FileLockedError(file, what, found.holder);
      try {
        unlinkSync(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }

  /** Removes the lock file if it is still this lock's; safe to call more than once. */
  release(): void {
    if (!held.delete(this)) return;
    clearInterval(this.#timer);
    if (readBody(this.path)?.token !== this.#body.token) return;
    try {
      unlinkSync(this.path);
    } catch {
      // Already gone: nothing to release.
    }
  }

  #refresh(): void {
    const now = new Date();
    try {
      if (readBody(this.path)?.token !== this.#body.token) throw new Error('taken over');
      utimesSync(this.path, now, now);
    } catch {
      // Another process found the lock stale (this one's event loop stalled for 30 s?) or removed it:
      // both may now write the file. Say so once; the owner decides whether to stop.
      if (this.#warned) return;
      this.#warned = true;
      process.emitWarning(`The lock ${this.path} is no longer this process's: another process may be writing the same file.`, {
        code: 'CLIPHOOK_LOCK_LOST',
      });
    }
  }
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
  const holder = body && { pid: body.pid, hostname: body.hostname, since: body.since };
  if (Date.now() - mtimeMs > LOCK_STALE_MS) return { holder, stale: true };
  // An unreadable body is a holder between its create and its write: fresh, so held.
  if (!holder || holder.hostname !== hostname()) return { holder, stale: false };
  // On this host the pid says it all: this process (a previous life of the same pid, such as pid 1
  // in a restarted container; a live store in this process was refused before getting here) or a
  // process that no longer exists.
  return { holder, stale: holder.pid === process.pid || !alive(holder.pid) };
}

function readBody(path: string): LockFileBody | null {
  try {
    const body = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockFileBody> | null;
    if (typeof body?.pid !== 'number' || typeof body.hostname !== 'string' || typeof body.token !== 'string') return null;
    return { pid: body.pid, hostname: body.hostname, since: String(body.since), token: body.token };
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
