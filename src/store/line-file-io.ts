import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { syncFolder } from './json-file.js';

/**
 * The file operations of a `LineJournal`, as a seam: tests wrap the default to count the bytes each
 * write takes or to fail one with ENOSPC, without filling a disk.
 */
export interface LineFileIo {
  /** Opens `file` for appending (created 0600, in a 0700 folder, when missing). */
  openAppend(file: string): Promise<FileHandle>;
  /** Appends every piece, in order, looping over short writes. */
  append(handle: FileHandle, pieces: readonly Buffer[]): Promise<void>;
  /**
   * Appends every piece with synchronous writes, looping over short ones: for an owner that must know a
   * few lines are in the page cache before it goes on. Optional: without it, such writes go through `append`.
   */
  appendSync?(handle: FileHandle, pieces: readonly Buffer[]): void;
  /** Empties the journal after a compaction. */
  truncate(handle: FileHandle): Promise<void>;
  /**
   * Writes `pieces` to `temp` in batches, then renames it over `file`; resolves with the bytes written.
   * With `sync`, flushes `temp` to the device before the rename and the folder after it.
   */
  replace(file: string, temp: string, pieces: Iterable<Buffer>, sync?: boolean): Promise<number>;
  /** Size in bytes, or -1 when the file does not exist. */
  size(file: string): Promise<number>;
  /** The file's lines, read as a stream: a file may be larger than a string can be. */
  lines(file: string): AsyncIterable<string>;
}

// A snapshot reaches the disk in writes of about this much, so compaction never holds the whole state
// as one string or one buffer (one string per write would hit V8's string limit at ~512 MiB).
const BATCH_BYTES = 1024 * 1024;

/** `node:fs`. */
export const nodeLineFileIo: LineFileIo = {
  async openAppend(file) {
    // Private to the owner (the relay's file holds token hashes and webhook bodies); an existing folder keeps its mode.
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    return open(file, 'a', 0o600);
  },
  append: (handle, pieces) => writeAllTo(handle, pieces),
  truncate: (handle) => handle.truncate(0),
  async replace(file, temp, pieces, sync = false) {
    const handle = await open(temp, 'w', 0o600);
    let total = 0;
    try {
      let batch: Buffer[] = [];
      let batchBytes = 0;
      for (const piece of pieces) {
        batch.push(piece);
        batchBytes += piece.length;
        if (batchBytes >= BATCH_BYTES) {
          await writeAllTo(handle, batch);
          total += batchBytes;
          batch = [];
          batchBytes = 0;
        }
      }
      await writeAllTo(handle, batch);
      total += batchBytes;
      if (sync) await handle.datasync();
    } catch (error) {
      await handle.close();
      // A half-written snapshot must not keep the space a full disk needs back.
      await rm(temp, { force: true });
      throw error;
    }
    await handle.close();
    await rename(temp, file);
    if (sync) await syncFolder(file);
    return total;
  },
  async size(file) {
    try {
      return (await stat(file)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return -1;
      throw error;
    }
  },
  // A generator, so the file is opened only when iterated: readline drops lines emitted before its iterator exists.
  async *lines(file) {
    yield* createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  },
};

async function writeAllTo(handle: FileHandle, pieces: readonly Buffer[]): Promise<void> {
  let rest = pieces.filter((piece) => piece.length > 0);
  while (rest.length > 0) {
    const { bytesWritten } = await handle.writev(rest);
    if (bytesWritten === 0) throw new Error('The file took no bytes.');
    // A short write is legal (a full disk often takes part, then fails): go on from where it stopped.
    let skip = bytesWritten;
    let i = 0;
    while (i < rest.length && skip >= rest[i]!.length) skip -= rest[i++]!.length;
    rest = rest.slice(i);
    if (skip > 0) rest[0] = rest[0]!.subarray(skip);
  }
}
