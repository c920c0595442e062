import { copyFileSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Where the service keeps bytes: uploaded assets (`assets/<sha256>.<ext>`, once per sha256, shared by the
 * accounts that uploaded them), made images (`images/<token>.<ext>`) and uploads on their way in
 * (`uploads/`). Beside the data file, or a temporary folder for a service in memory, removed at close.
 */
export class Files {
  readonly dir: string;
  readonly #temporary: boolean;

  /** `dataFile` false: a temporary folder. */
  constructor(dataFile: string | false) {
    this.#temporary = dataFile === false;
    this.dir = dataFile === false ? mkdtempSync(join(tmpdir(), 'cliphook-service-')) : join(dirname(dataFile), 'service-files');
  }

  /** Where the bytes of an uploaded asset are kept. */
  asset(sha256: string, ext: string): string {
    return join(this.dir, 'assets', `${sha256}.${ext}`);
  }

  /** Where a made image's file (or its preview, `webp`) is kept. */
  image(token: string, ext: string): string {
    return join(this.dir, 'images', `${token}.${ext}`);
  }

  /** The folder of made images (the renderer writes there). */
  get images(): string {
    return join(this.dir, 'images');
  }

  /** The folder uploads are received into. */
  get uploads(): string {
    return join(this.dir, 'uploads');
  }

  /** Keeps `bytes` as an asset's file, unless the same bytes are kept already. */
  keepAsset(sha256: string, ext: string, bytes: Buffer): string {
    const path = this.asset(sha256, ext);
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, bytes, { mode: 0o600 });
    }
    return path;
  }

  /** Moves a received file to its place, or drops it when the same bytes are kept there already. */
  place(from: string, to: string): void {
    if (existsSync(to)) return rmSync(from, { force: true });
    mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
    try {
      renameSync(from, to);
    } catch (error) {
      // Another device (a files folder moved by hand): copy, then drop the temporary file.
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      copyFileSync(from, to);
      rmSync(from, { force: true });
    }
  }

  /** Removes a temporary folder (a service in memory leaves nothing behind). */
  async close(): Promise<void> {
    if (this.#temporary) await rm(this.dir, { recursive: true, force: true });
  }
}
