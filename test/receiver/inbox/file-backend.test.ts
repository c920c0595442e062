// The file inbox writes a run's `running` line (with its attempt) before the claim resolves, so a handler that
// ends the process has its run counted; the next start runs it again, or makes it dead after its last run.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileLockedError } from '../../../src/index.js';
import { FileInboxBackend } from '../../../src/receiver/inbox/file-backend.js';
import { nodeInboxFileIo, type InboxFileIo } from '../../../src/receiver/inbox/file-inbox-load.js';
import { INBOX_FILE_HEADER } from '../../../src/receiver/inbox/inbox-file-format.js';
import { newRecord } from '../../../src/receiver/inbox/record.js';
import { tempDir } from '../../helpers/webhooks.js';

const T0 = 1_700_000_000_000;
const clock = () => T0;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const record = (id: string) => newRecord(id, 'video.completed', `{"id":"${id}"}`, [`e:${id}`], 'webhook', T0);

async function open() {
  const tmp = await tempDir();
  cleanups.push(tmp.cleanup);
  const file = tmp.file('inbox.json');
  const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 60_000, clock });
  await backend.open();
  cleanups.push(() => backend.close());
  /** What a next start would see had the process died now: a copy of the files, opened by another back end. */
  const afterCrash = async (maxAttempts = 3) => {
    const copy = tmp.file('copy.json');
    await copyFile(`${file}.journal`, `${copy}.journal`);
    const other = new FileInboxBackend({ file: copy, keepDone: 100, keepDoneMs: 60_000, maxAttempts, clock });
    await other.open();
    cleanups.push(() => other.close());
    return other;
  };
  /** The journal's lines as they are at this instant, before any other write can start. */
  const linesNow = () => readFileSync(`${file}.journal`, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { backend, linesNow, afterCrash };
}

describe('FileInboxBackend journal lines', () => {
  it('a claim resolves once the run is on disk: a process ended right after still counts it', async () => {
    const { backend, linesNow, afterCrash } = await open();
    await backend.add(record('a'), 10);
    const [a] = await backend.claim(T0, T0 + 1000, 'w', 10);
    // No other write, no settle: exactly what a handler calling process.exit() at once leaves.
    expect(linesNow()).toContainEqual({ id: 'a', state: 'running', attempts: 1, nextAttemptAt: null });
    expect(a).toMatchObject({ id: 'a', attempts: 1 });
    expect(await (await afterCrash()).get('a')).toMatchObject({ state: 'pending', attempts: 1 });
  });

  it('a claim writes its running line at once, not a turn of the event loop later (handlers start at the pace requests come)', async () => {
    const { backend, linesNow } = await open();
    await backend.add(record('a'), 10);
    let turned = false;
    setImmediate(() => (turned = true));
    await backend.claim(T0, T0 + 1000, 'w', 10);
    expect(turned).toBe(false);
    expect(linesNow()).toContainEqual({ id: 'a', state: 'running', attempts: 1, nextAttemptAt: null });
  });

  it('a record found running after its last run is dead at open, with the reason, and runs no more', async () => {
    const { backend, afterCrash } = await open();
    await backend.add(record('a'), 10);
    await backend.add(record('b'), 10);
    await backend.claim(T0, T0 + 1000, 'w', 1);
    const next = await afterCrash(1);
    expect(await next.get('a')).toMatchObject({ state: 'dead', attempts: 1, finishedAt: T0, lastError: expect.stringContaining('The process ended while the inbox was running it (run 1 of 1)') });
    expect((await next.claim(T0, T0 + 1000, 'w', 10)).map((r) => r.id)).toEqual(['b']);
  });

  it('a run settled before the next write keeps its attempt: the next start sees attempts 1, pending later', async () => {
    const { backend, afterCrash } = await open();
    await backend.add(record('a'), 10);
    const [a] = await backend.claim(T0, T0 + 1000, 'w', 10);
    await backend.settle({ ...a!, state: 'pending', nextAttemptAt: T0 + 500, lastError: 'boom' }, 'w', T0);
    expect(await (await afterCrash()).get('a')).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: T0 + 500, lastError: 'boom' });
  });
});

describe('FileInboxBackend files', () => {
  it('opens and compacts through streams: an older-format snapshot served in 1 KiB pieces, rewritten a record a piece', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    // Nothing at `file` on disk: the snapshot exists only as the injected io's pieces.
    const file = tmp.file('inbox.json');
    const body = 'x'.repeat(1000);
    const records = Array.from({ length: 2000 }, (_, i) => ({ ...newRecord(`r${i}`, 'video.completed', body, [`e:${i}`], 'webhook', T0 + i) }));
    const text = JSON.stringify({ version: 1, records });
    let largestPiece = 0;
    let rewritten = 0;
    const io: InboxFileIo = {
      ...nodeInboxFileIo,
      size: async (path) => (path === file ? text.length : nodeInboxFileIo.size(path)),
      async *chunks(path) {
        if (path !== file) return yield* nodeInboxFileIo.chunks(path);
        for (let at = 0; at < text.length; at += 1024) yield text.slice(at, at + 1024);
      },
      // eslint-disable-next-line require-yield
      async *lines() {
        throw new Error('the inbox reads its files by pieces');
      },
      replace: async (_file, _temp, pieces) => {
        let bytes = 0;
        for (const piece of pieces) {
          largestPiece = Math.max(largestPiece, piece.length);
          bytes += piece.length;
          rewritten++;
        }
        return bytes;
      },
    };
    const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 60_000, clock, io });
    await backend.open();
    cleanups.push(() => backend.close());
    expect(await backend.stats()).toEqual({ pending: 2000, running: 0, dead: 0, done: 0 });
    expect(await backend.get('r1999')).toMatchObject({ body, receivedAt: T0 + 1999 });
    // Migrated at open: a header and one piece per record, none of them the whole inbox.
    expect(rewritten).toBe(2001);
    expect(largestPiece).toBeLessThan(1300);
  });

  it('a real 10 MB older-format file opens, migrates, purges and reopens', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    const body = 'y'.repeat(2500);
    const records = Array.from({ length: 4000 }, (_, i) => ({
      ...newRecord(`r${i}`, 'video.completed', body, [`e:${i}`], 'webhook', T0),
      ...(i % 2 ? { state: 'dead' as const, attempts: 6, nextAttemptAt: null, finishedAt: T0, lastError: 'bug' } : {}),
    }));
    await writeFile(file, JSON.stringify({ version: 1, records }));
    const open = async () => {
      const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 60_000, clock, maxAttempts: 6 });
      await backend.open();
      return backend;
    };
    const first = await open();
    expect(await first.stats()).toEqual({ pending: 2000, running: 0, dead: 2000, done: 0 });
    expect(await first.purge('dead', T0 + 1)).toBe(2000);
    await first.close();
    expect(readFileSync(file, 'utf8').slice(0, INBOX_FILE_HEADER.length)).toBe(INBOX_FILE_HEADER);
    const again = await open();
    cleanups.push(() => again.close());
    expect(await again.stats()).toEqual({ pending: 2000, running: 0, dead: 0, done: 0 });
  });

  it('keeps dead records by keepDead and keepDeadMs, reports each one it drops once, and never drops a pending one', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    let now = T0;
    const dropped: string[] = [];
    const open = async () => {
      const backend = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 60_000, keepDead: 2, keepDeadMs: 1000, onDropped: (r) => void dropped.push(`${r.id} ${r.state} ${r.lastError}`), clock: () => now, maxAttempts: 3 });
      await backend.open();
      return backend;
    };
    const backend = await open();
    for (const id of ['a', 'b', 'c', 'p']) await backend.add(record(id), 10);
    const claimed = await backend.claim(now, now + 1000, 'w', 3);
    for (const r of claimed) await backend.settle({ ...r, state: 'dead', finishedAt: now++, lastError: `bug ${r.id}` }, 'w', now);
    expect(dropped).toEqual(['a dead bug a']);
    expect((await backend.list('dead', 10)).map((r) => r.id).sort()).toEqual(['b', 'c']);
    await backend.close();
    // Past keepDeadMs, at the next start: both others go; the pending one stays, however old.
    now = T0 + 5000;
    const next = await open();
    expect(dropped).toEqual(['a dead bug a', 'b dead bug b', 'c dead bug c']);
    expect(await next.stats()).toEqual({ pending: 1, running: 0, dead: 0, done: 0 });
    await next.close();
    // Dropped for good: not reported again.
    const third = await open();
    cleanups.push(() => third.close());
    expect(dropped).toHaveLength(3);
    expect(await third.get('p')).toMatchObject({ state: 'pending' });
  });

  it('close() closes the journal even when its last write fails (ENOSPC)', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    let failing = false;
    let closed = 0;
    const io: InboxFileIo = {
      ...nodeInboxFileIo,
      openAppend: async (path) => {
        const handle = await nodeInboxFileIo.openAppend(path);
        const close = handle.close.bind(handle);
        handle.close = async () => {
          closed++;
          return close();
        };
        return handle;
      },
      append: async (handle, pieces) => {
        if (failing) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return nodeInboxFileIo.append(handle, pieces);
      },
      appendSync: (handle, pieces) => {
        if (failing) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return nodeInboxFileIo.appendSync!(handle, pieces);
      },
    };
    const backend = new FileInboxBackend({ file: tmp.file('inbox.json'), keepDone: 100, keepDoneMs: 60_000, clock, io });
    await backend.open();
    await backend.add(record('a'), 10);
    failing = true;
    await expect(backend.add(record('b'), 10)).rejects.toThrow(/ENOSPC/);
    await expect(backend.close()).rejects.toThrow(/ENOSPC/);
    expect(closed).toBe(1);
    // And the lock is released: the next start opens it (and finds what was written).
    failing = false;
    const next = new FileInboxBackend({ file: tmp.file('inbox.json'), keepDone: 100, keepDoneMs: 60_000, clock });
    await next.open();
    cleanups.push(() => next.close());
    expect((await next.list(undefined, 10)).map((r) => r.id)).toEqual(['a']);
  });

  it('read-only: reads a file left with a stale lock and running records without changing a byte, and refuses every change', async () => {
    const tmp = await tempDir();
    cleanups.push(tmp.cleanup);
    const file = tmp.file('inbox.json');
    const app = new FileInboxBackend({ file, keepDone: 100, keepDoneMs: 60_000, clock, maxAttempts: 3 });
    await app.open();
    await app.add(record('a'), 10);
    await app.add(record('b'), 10);
    await app.claim(T0, T0 + 1000, 'w', 1);
    // A live holder (this process, here) is refused, as the app's lock says.
    expect(() => new FileInboxBackend({ file, keepDone: 0, keepDoneMs: 0, clock, readOnly: true })).toThrow(FileLockedError);
    // What a killed app leaves: its lock file, naming a process that has ended.
    const lock = JSON.parse(readFileSync(`${file}.lock`, 'utf8')) as Record<string, unknown>;
    const copy = tmp.file('copy.json');
    await copyFile(`${file}.journal`, `${copy}.journal`);
    await writeFile(`${copy}.lock`, JSON.stringify({ ...lock, pid: await endedPid(), started: null }));
    const before = snapshotOf(tmp.dir);
    const reader = new FileInboxBackend({ file: copy, keepDone: 0, keepDoneMs: 0, clock, readOnly: true });
    await reader.open();
    expect(await reader.stats()).toEqual({ pending: 1, running: 1, dead: 0, done: 0 });
    expect(await reader.get('a')).toMatchObject({ state: 'running', attempts: 1 });
    await expect(reader.purge('done', T0)).rejects.toThrow(/read-only/);
    await expect(reader.replay('a', T0)).rejects.toThrow(/read-only/);
    await reader.close();
    expect(snapshotOf(tmp.dir)).toEqual(before);
    await app.close();
  });
});

/** Every file in `dir` with its bytes. */
function snapshotOf(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), 'latin1')]));
}

/** The pid of a process that has just ended. */
async function endedPid(): Promise<number> {
  const proc = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => proc.once('exit', resolve));
  return proc.pid!;
}
