import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FileDeliveryStore, FileLockedError } from '../../src/index.js';
import { FileInboxBackend } from '../../src/receiver/inbox/file-backend.js';
import { FileLock, LOCK_STALE_MS } from '../../src/store/file-lock.js';
import { parseProcStat } from '../../src/store/process-identity.js';

const child = fileURLToPath(new URL('./file-lock.child.ts', import.meta.url));
const racer = fileURLToPath(new URL('./file-lock.racer.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));

let dir: string;
let file: string;
const cleanups: (() => unknown)[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cliphook-lock-'));
  file = join(dir, 'data', 'deliveries.json');
  await mkdir(join(dir, 'data'));
});
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(dir, { recursive: true, force: true });
});

/** A store that is closed after the test. */
function open(): FileDeliveryStore {
  const store = new FileDeliveryStore({ file });
  cleanups.push(() => store.close());
  return store;
}

function writeLock(body: object, ageMs = 0): void {
  writeFileSync(`${file}.lock`, JSON.stringify(body));
  const at = new Date(Date.now() - ageMs);
  utimesSync(`${file}.lock`, at, at);
}

/** Starts the child holding a store on `file`; resolves once it has marked its delivery. */
async function holder(mode?: 'exit'): Promise<ChildProcessWithoutNullStreams> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, file, ...(mode ? [mode] : [])], { cwd: root });
  cleanups.push(() => proc.kill('SIGKILL'));
  let out = '';
  let err = '';
  proc.stderr.on('data', (chunk) => (err += chunk));
  await new Promise<void>((resolve, reject) => {
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('ready')) resolve();
    });
    proc.once('exit', (code) => (out.includes('ready') ? resolve() : reject(new Error(`child exited ${code}: ${err}`))));
  });
  return proc;
}

const exited = (proc: ChildProcessWithoutNullStreams) =>
  proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => proc.once('exit', () => resolve()));

describe('FileDeliveryStore across processes', () => {
  it('refuses a file another live process holds, naming it, and takes it over once that process is killed', async () => {
    const proc = await holder();
    let refused: unknown;
    try {
      new FileDeliveryStore({ file });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(FileLockedError);
    const error = refused as FileLockedError;
    expect(error.code).toBe('file_locked');
    expect(error.file).toBe(file);
    expect(error.holder).toMatchObject({ pid: proc.pid, hostname: hostname() });
    expect(error.message).toContain(`process ${proc.pid} on ${hostname()}`);
    expect(error.message).toMatch(/one FileDeliveryStore per file/);

    proc.kill('SIGKILL'); // no exit hook runs: the lock file stays behind, its pid dead
    await exited(proc);
    expect(existsSync(`${file}.lock`)).toBe(true);
    const store = open();
    // What the killed process marked is still known.
    expect(await store.claim(['d:from-child'], 60_000, 'parent')).toBe('processed');
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
  });

  it('removes the lock when the holder exits without closing its store', async () => {
    const proc = await holder('exit');
    await exited(proc);
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(await open().claim(['d:from-child'], 60_000, 'parent')).toBe('processed');
  });

  it('removes the lock on close(), so another store (any process) can open the file', async () => {
    const store = new FileDeliveryStore({ file });
    expect(existsSync(`${file}.lock`)).toBe(true);
    await store.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
    open();
  });
});

/** This process's place and start time as a lock records them (Linux; `null` elsewhere), for hand-made locks. */
function here() {
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return null;
    }
  };
  const stat = read(`/proc/${process.pid}/stat`);
  let pidNamespace: string | null = null;
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    // not Linux
  }
  return {
    hostname: hostname(),
    boot: read('/proc/sys/kernel/random/boot_id'),
    pidNamespace,
    started: stat === null ? null : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]),
  };
}

describe('FileLock', () => {
  it('refuses a fresh lock from another machine, and takes it over once untouched for 30 s', () => {
    const other = { pid: 1, hostname: `${hostname()}-elsewhere`, since: '2026-11-23T00:00:00.000Z', token: 't' };
    writeLock(other, LOCK_STALE_MS - 5_000);
    expect(() => FileLock.acquire(file, 'store')).toThrow(/last touched 25 s ago/);
    writeLock(other, LOCK_STALE_MS + 5_000);
    const lock = FileLock.acquire(file, 'store');
    cleanups.push(() => lock.release());
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid, hostname: hostname() });
  });

  it('treats a container sharing the host name but not its pid namespace as another machine', () => {
    // Its pid 1 is not ours, whatever our pid 1 is: only the heartbeat can tell.
    writeLock({ ...here(), pidNamespace: 'pid:[1]', pid: 1, started: 1, since: '2026-11-23T00:00:00.000Z', token: 't' });
    expect(() => FileLock.acquire(file, 'store')).toThrow(FileLockedError);
  });

  it('refuses a second lock from this very process (another worker thread, a symlinked path)', () => {
    const first = FileLock.acquire(file, 'store');
    cleanups.push(() => first.release());
    expect(() => FileLock.acquire(file, 'store')).toThrow(`process ${process.pid} on ${hostname()}`);
  });

  it('names the receiver inbox in a sentence that reads: one receiver inbox per file', () => {
    const inbox = join(dir, 'data', 'inbox.json');
    const held = FileLock.acquire(inbox, 'test');
    cleanups.push(() => held.release());
    expect(() => new FileInboxBackend({ file: inbox, keepDone: 1, keepDoneMs: 1, clock: Date.now })).toThrow(/: one receiver inbox per file, as two processes/);
  });

  it("takes over a lock left by a previous life of this process's pid (a restarted process that got the same pid)", () => {
    const me = here();
    writeLock({ ...me, started: me.started === null ? null : me.started - 1, pid: process.pid, since: '2020-01-01T00:00:00.000Z', token: 'earlier' });
    const lock = FileLock.acquire(file, 'store');
    cleanups.push(() => lock.release());
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8')).token).not.toBe('earlier');
  });

  it('treats an unreadable lock as held while fresh (a holder between create and write) and stale later', () => {
    writeFileSync(`${file}.lock`, '');
    expect(() => FileLock.acquire(file, 'store')).toThrow(/in use by another process/);
    const old = new Date(Date.now() - LOCK_STALE_MS - 1_000);
    utimesSync(`${file}.lock`, old, old);
    FileLock.acquire(file, 'store').release();
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('creates the folder the file will live in', () => {
    const deep = join(dir, 'new', 'deeper', 'deliveries.json');
    FileLock.acquire(deep, 'store').release();
    expect(existsSync(join(dir, 'new', 'deeper'))).toBe(true);
    expect(existsSync(`${deep}.lock`)).toBe(false);
  });

  it('touches the lock on its heartbeat (Node\'s interval by default)', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const lock = FileLock.acquire(file, 'store', { refreshMs: 20 });
    cleanups.push(() => lock.release());
    const old = new Date(Date.now() - 20_000);
    utimesSync(`${file}.lock`, old, old);
    await vi.waitFor(() => expect(Date.now() - statSync(`${file}.lock`).mtimeMs).toBeLessThan(5_000));
    expect(warn).not.toHaveBeenCalled();
  });

  it('warns once, keeping the other lock, if another process took it over, however many beats follow', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    // Beats by hand: "once" is then counted over beats that ran, not over real milliseconds.
    let beat: (() => void) | null = null;
    const timers = { setInterval: (callback: () => void) => (beat = callback), clearInterval: () => void (beat = null) };
    const lock = FileLock.acquire(file, 'store', { timers });
    cleanups.push(() => lock.release());
    const old = new Date(Date.now() - 20_000);
    utimesSync(`${file}.lock`, old, old);
    beat!();
    expect(Date.now() - statSync(`${file}.lock`).mtimeMs).toBeLessThan(5_000);
    expect(warn).not.toHaveBeenCalled();

    writeLock({ pid: 2, hostname: 'elsewhere', since: '2026-11-23T00:00:00.000Z', token: 'theirs' });
    beat!();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![1]).toMatchObject({ code: 'CLIPHOOK_LOCK_LOST' });
    for (let i = 0; i < 5; i++) beat!();
    expect(warn).toHaveBeenCalledTimes(1);
    lock.release();
    expect(beat).toBeNull(); // release stops the heartbeat
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8')).token).toBe('theirs');
  });

  it('checks its options, naming the option', () => {
    expect(() => FileLock.acquire(file, 'store', { refreshMs: 0 })).toThrow(/`refreshMs`/);
    expect(() => FileLock.acquire(file, 'store', { timers: {} as never })).toThrow(/`timers`/);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it("keeps its heartbeat out of a test's fake timers", () => {
    vi.useFakeTimers();
    const lock = FileLock.acquire(file, 'store');
    cleanups.push(() => lock.release());
    expect(vi.getTimerCount()).toBe(0);
    expect(() => vi.runAllTimers()).not.toThrow();
  });
});

describe('FileLock across processes', () => {
  it('keeps the lock of a paused process (Ctrl-Z, a debugger) on this machine however long ago it was touched', async () => {
    const proc = await holder();
    proc.kill('SIGSTOP');
    cleanups.push(() => proc.kill('SIGCONT'));
    const old = new Date(Date.now() - LOCK_STALE_MS * 10);
    utimesSync(`${file}.lock`, old, old);
    expect(() => FileLock.acquire(file, 'store')).toThrow(`process ${proc.pid}`);
  });

  it.runIf(existsSync('/proc/self/stat'))('takes over at once the lock of a zombie: a holder killed and not yet reaped (issue 10)', async () => {
    // `exec sleep` replaces the shell with a parent that never waits: the killed child stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 600 & echo $!; exec sleep 600']);
    cleanups.push(() => parent.kill('SIGKILL'));
    const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (chunk) => resolve(String(chunk).trim()))));
    const stat = () => parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    writeLock({ ...here(), pid, started: stat()!.started, since: new Date().toISOString(), token: 'zombie' });
    expect(() => FileLock.acquire(file, 'store')).toThrow(`process ${pid}`); // alive: held
    // The shell reaps its child until it has exec'd sleep: killed before that, the child is gone, not a zombie.
    await vi.waitFor(() => expect(readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim()).toBe('sleep'), { timeout: 10_000 });
    process.kill(pid, 'SIGKILL');
    await vi.waitFor(() => expect(stat()!.state).toBe('Z'));
    expect(() => process.kill(pid, 0)).not.toThrow(); // still there for kill(0), as zombies are
    const lock = FileLock.acquire(file, 'store');
    cleanups.push(() => lock.release());
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
  });

  it('lets exactly one of many processes take over the same stale lock', async () => {
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => dead.once('exit', resolve));
    writeLock({ ...here(), pid: dead.pid!, started: 1, since: '2026-11-23T00:00:00.000Z', token: 'dead' });
    const at = Date.now() + 2_500; // every child tries at the same moment, once all have started
    const racers = Array.from({ length: 6 }, () => {
      const proc = spawn(process.execPath, ['--import', 'tsx', racer, file, String(at)], { cwd: root });
      cleanups.push(() => proc.kill('SIGKILL'));
      let out = '';
      return new Promise<string>((resolve) => {
        proc.stdout.on('data', (chunk) => resolve((out += chunk).trim()));
        proc.stderr.on('data', (chunk) => (out += chunk));
        proc.once('exit', () => resolve(out.trim()));
      });
    });
    const results = await Promise.all(racers);
    expect(results.filter((r) => r === 'got')).toHaveLength(1);
    expect(results.filter((r) => r === 'locked')).toHaveLength(5);
  }, 20_000);
});
