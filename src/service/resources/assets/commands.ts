import { existsSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { AssetFormFields, assetForm, type AssetList as AssetListBody } from '../../contract/assets.js';
import { SUBJECT_CONSENTS, type SubjectConsent } from '../../contract/common.js';
import { parseOrThrow, ServiceError } from '../../contract/problems.js';
import type { Files } from '../../core/files.js';
import type { Caller } from '../../core/gate.js';
import type { ServiceStore } from '../../core/store.js';
import { parseAssetSimulation, type Asset, type Assets, type AssetTables } from './assets.js';
import { checkPixels } from './pixels.js';
import { assetView, uploadView } from './views.js';
import type { z } from 'zod';
import type { Site } from '../../core/site.js';

/** A file received whole (the HTTP adapter reads the multipart body as it streams), with its form fields. */
export interface ReceivedFile {
  path: string;
  size: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  mime: string;
  ext: string;
  /** The file name the client gave. */
  name: string;
  /** The text fields of the form. */
  fields: Record<string, string>;
}

/** An upload kept: the asset (new, or the account's one with the same bytes) and the consent this upload declared. */
export interface AcceptedUpload {
  asset: Asset;
  deduped: boolean;
  subjectConsent: SubjectConsent | null;
}

export interface AssetCommandsOptions {
  store: ServiceStore<AssetTables>;
  assets: Assets;
  files: Files;
  /** The service's origin, for `public_url` (known once the server listens). */
  site: Site;
}

/**
 * The commands of spec 4.12-4.15 on reference photos: typed input, typed answers, a `ServiceError` with the
 * spec's code for every refusal. The upload page of the assistant keeps photos through `accept`, so a photo
 * from the page is checked, stored and moderated exactly as one sent to POST /v1/assets.
 */
export class AssetCommands {
  readonly #options: AssetCommandsOptions;

  constructor(options: AssetCommandsOptions) {
    this.#options = options;
  }

  /**
   * Keeps an upload (spec 4.12, 3.2): its pixels must decode within the limit (pixels.ts), its form
   * fields follow the contract, `simulate` may refuse it or plan its rejection, and the same bytes from the
   * same account are the same asset (`deduped`). The received file is removed on every refusal.
   * `requireConsent`: the photo upload page, where who is in the photo must be said (422 consent_required).
   */
  async accept(accountId: number, file: ReceivedFile, { requireConsent = false }: { requireConsent?: boolean } = {}): Promise<AcceptedUpload> {
    try {
      const pixels = await checkPixels(file.path, file.mime);
      if (!pixels.ok) throw new ServiceError(pixels.code, pixels.detail, pixels.extra ? { extra: pixels.extra } : {});
      const form = assetForm(parseOrThrow(AssetFormFields, file.fields) as z.output<typeof AssetFormFields>);
      if (form.subjectConsent === null && requireConsent) {
        throw new ServiceError('consent_required', 'Say who is in the photo: yourself (self), someone who agreed (permission), or no real person (no_real_person).', { extra: { allowed_values: SUBJECT_CONSENTS } });
      }
      if (form.sha256 !== null && form.sha256 !== file.sha256) {
        throw new ServiceError('invalid_parameter', 'sha256 does not match the file: the bytes received hash differently, so the upload was cut or changed.', { extra: { parameter: 'sha256' } });
      }
      const simulation = parseAssetSimulation(form.simulate ?? undefined);
      if (simulation?.kind === 'moderation_rejected') throw new ServiceError('moderation_rejected', 'The photo failed moderation; nothing was stored. Send another photo.', { extra: { reason_code: simulation.reason } });
      const previous = this.#sameBytes(accountId, file.sha256);
      // The same bytes were rejected before: answering that asset would show a status the upload response never has (spec 2.6).
      if (previous?.status === 'rejected') {
        throw new ServiceError('moderation_rejected', `These bytes are asset ${previous.id}, which failed moderation. Send another photo.`, { extra: { reason_code: previous.reasonCode ?? 'explicit_content' } });
      }
      // One synchronous turn from placing the file to recording the asset, as a removal drops files in one
      // turn too: a delete of the same bytes cannot remove a file this upload has just counted on.
      this.#options.files.place(file.path, this.#options.files.asset(file.sha256, file.ext));
      const added = this.#options.assets.add({
        accountId, sha256: file.sha256, name: file.name || `upload.${file.ext}`, fileSize: file.size, mimeType: file.mime, ext: file.ext,
        subjectConsent: form.subjectConsent, ...(simulation?.kind === 'rejected' ? { rejectAs: simulation.reason } : {}),
      });
      return { ...added, subjectConsent: form.subjectConsent };
    } finally {
      await rm(file.path, { force: true });
    }
  }

  /** POST /assets (spec 4.12): the upload response of spec 2.6. */
  async upload(caller: Caller, file: ReceivedFile) {
    const accepted = await this.accept(caller.account.id, file);
    return uploadView(accepted.asset, accepted.deduped, this.#options.site.origin);
  }

  /** GET /assets/{id} (spec 4.14). */
  get(caller: Caller, id: number) {
    return assetView(this.own(caller, id), this.#options.site.origin);
  }

  /**
   * GET /assets (spec 4.13): the caller's trusted image assets that can be used now (a character photo past
   * its 30 days is left out), newest first. The envelope is not shown by the spec: `{ data, total, limit, offset }`.
   */
  list(caller: Caller, { limit, offset }: { limit: number; offset: number }): z.output<typeof AssetListBody> {
    const { assets } = this.#options;
    const trusted = assets.listTrusted(caller.account.id).filter((asset) => assets.usable(asset));
    return { data: trusted.slice(offset, offset + limit).map((asset) => assetView(asset, this.#options.site.origin)), total: trusted.length, limit, offset };
  }

  /** DELETE /assets/{id} (spec 4.15): the asset goes, and its file once no asset of any account uses those bytes. */
  async remove(caller: Caller, id: number): Promise<{ success: true; id: number }> {
    const asset = this.own(caller, id);
    const dropFile = this.drop(asset);
    // The file goes once the removal is saved: a removal taken back (a failed write) keeps a working asset.
    await this.#options.store.commit();
    dropFile();
    return { success: true, id: asset.id };
  }

  /** Removes an asset, and returns what removes its file once that removal is saved (also a character's photos). */
  drop(asset: Asset): () => void {
    const { assets, files } = this.#options;
    assets.remove(asset);
    return () => {
      if (!assets.fileInUse(asset.sha256)) rmSync(files.asset(asset.sha256, asset.ext), { force: true });
    };
  }

  /**
   * The file behind an asset's public_url, `/files/assets/<token>.<ext>` (spec 2.6): the unguessable token is
   * the credential. `null` for an unknown or deleted asset, or one moderation rejected.
   */
  file(name: string): { path: string; mime: string } | null {
    const match = /^([A-Za-z0-9_-]{1,64})(?:\.([a-z0-9]{1,5}))?$/.exec(name);
    if (!match) return null;
    const asset = this.#options.assets.byToken(match[1]!);
    if (!asset || asset.status === 'rejected' || (match[2] !== undefined && match[2] !== asset.ext)) return null;
    const path = this.#options.files.asset(asset.sha256, asset.ext);
    return existsSync(path) ? { path, mime: asset.mimeType } : null;
  }

  /** The caller's asset, or the 404 of spec 4.14: unknown ids and other accounts' look the same. */
  own(caller: Caller, id: number): Asset {
    const asset = this.#options.assets.get(caller.account.id, id);
    if (!asset) throw new ServiceError('not_found', `No asset ${id}.`);
    return asset;
  }

  #sameBytes(accountId: number, sha256: string): Asset | undefined {
    return this.#options.assets.find(accountId, sha256);
  }
}
