import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import busboy from 'busboy';
import { fileTypeFromBuffer } from 'file-type';
import { ASSET_TYPES, MAX_ASSET_BYTES } from '../contract/assets.js';
import type { Refusal } from '../contract/problems.js';

/** What was received, or why not. */
type Validated<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };



// file-type reads at most this many bytes from the start of a file.
const SNIFF_BYTES = 4100;
// After a refusal the rest of the body is read and dropped, so the sender reads the answer instead of
// EPIPE; a sender that keeps going past this is cut off.
const DRAIN_LIMIT = 64 * 1024 * 1024;

/** A file received whole, hashed and recognised by its bytes; it waits at `path` for the caller to keep or drop. */
export interface ReceivedUpload {
  path: string;
  size: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  mime: string;
  ext: string;
  /** The file name the client gave, for the asset's `name`. */
  name: string;
  /** The text fields of the form: `subject_consent`, `sha256`, `simulate`, … */
  fields: Record<string, string>;
}

export interface UploadOptions {
  /** Folder the file is written to while it arrives. */
  dir: string;
  /** @default MAX_ASSET_BYTES */
  maxBytes?: number;
}

/**
 * Reads a POST /assets body (multipart/form-data) as it streams: the `file` part goes to a temporary file
 * in `dir` while its SHA-256 is computed and its first bytes are kept for type detection; the cap is
 * enforced while reading (413 too_large as soon as it is passed, nothing buffered whole). The text fields
 * come back as they are: the caller checks `subject_consent` and `sha256`. Never throws for what a
 * client sends: every bad body is a refusal (400 no_file, 400 bad_mime, 413 too_large).
 */
export async function receiveUpload(req: IncomingMessage, { dir, maxBytes = MAX_ASSET_BYTES }: UploadOptions): Promise<Validated<ReceivedUpload>> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;.*boundary=/i.test(type)) {
    drain(req);
    return refuse('no_file', 'Send multipart/form-data with the image in a part named file.');
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `.upload-${randomBytes(8).toString('hex')}`);
  let parser: busboy.Busboy;
  try {
    // busboy's own limit answers at the limit itself; one byte more lets a file of exactly maxBytes in.
    parser = busboy({ headers: req.headers, limits: { files: 1, fileSize: maxBytes + 1, fields: 16, fieldSize: 1024, parts: 32, headerPairs: 32 } });
  } catch (error) {
    drain(req);
    return refuse('no_file', `The multipart body cannot be read: ${(error as Error).message}.`);
  }

  return new Promise((resolve) => {
    const fields: Record<string, string> = {};
    const hash = createHash('sha256');
    const head: Buffer[] = [];
    let headBytes = 0;
    let size = 0;
    let name = '';
    let fileDone: Promise<void> | null = null;
    let out: WriteStream | null = null;
    let settled = false;

    const finish = (result: Validated<ReceivedUpload>) => {
      if (settled) return;
      settled = true;
      if (result.ok) return resolve(result);
      req.unpipe(parser);
      drain(req);
      // Answered once the partial file is gone; it may still be opening, so it goes after its stream closes.
      const remove = () => void rm(path, { force: true }).then(() => resolve(result), () => resolve(result));
      if (out && !out.closed) {
        out.once('close', remove);
        out.destroy();
      } else remove();
    };

    parser.on('field', (field, value) => {
      fields[field] = value;
    });
    parser.on('file', (field, stream, info) => {
      // Only the part named file is kept; another file part is read and dropped.
      if (field !== 'file' || fileDone) return void stream.resume();
      name = info.filename ?? '';
      const file = createWriteStream(path, { mode: 0o600 });
      out = file;
      fileDone = new Promise<void>((done, fail) => {
        file.on('finish', done);
        file.on('error', fail);
      });
      fileDone.catch(() => finish(refuse('internal_error', 'The upload could not be stored.')));
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        hash.update(chunk);
        if (headBytes < SNIFF_BYTES) {
          head.push(chunk);
          headBytes += chunk.length;
        }
      });
      stream.on('limit', () => {
        finish(refuse('too_large', `The file is larger than ${maxBytes} bytes (20 MB).`, { max_bytes: maxBytes }));
      });
      stream.pipe(file);
    });
    parser.on('filesLimit', () => undefined);
    parser.on('error', (error: Error) => finish(refuse('no_file', `The multipart body cannot be read: ${error.message}.`)));
    parser.on('close', () => {
      void (async () => {
        if (settled) return;
        if (!fileDone) return finish(refuse('no_file', 'No file: send the image in a part named file.'));
        try {
          await fileDone;
        } catch {
          return;
        }
        if (size === 0) return finish(refuse('no_file', 'The file is empty.'));
        const detected = await fileTypeFromBuffer(Buffer.concat(head, headBytes));
        const ext = detected ? ASSET_TYPES.get(detected.mime) : undefined;
        if (!detected || !ext) {
          return finish(refuse('bad_mime', `The file is ${detected ? detected.mime : 'not an image this service knows'}; send jpg, png, webp, gif or heic.`));
        }
        finish({ ok: true, value: { path, size, sha256: hash.digest('hex'), mime: detected.mime === 'image/heif' ? 'image/heic' : detected.mime, ext, name, fields } });
      })();
    });
    req.on('aborted', () => finish(refuse('no_file', 'The upload was cut off.')));
    req.pipe(parser);
  });
}

/** Reads and drops the rest of a refused body, up to a bound (64 MiB), so the sender reads the answer. */
export function drain(req: IncomingMessage): void {
  let read = 0;
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > DRAIN_LIMIT) req.destroy();
  });
  req.resume();
}

function refuse(code: Refusal['code'], detail: string, extra?: Record<string, unknown>): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: extra ? { code, detail, extra } : { code, detail } };
}
