import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { dirname, join } from 'node:path';
import { fail, ok, refused, type Result } from '../result.js';
import type { Caller, Service } from '../service.js';
import { SUBJECT_CONSENTS, type SubjectConsent } from '../videos/validate.js';
import { parseAssetSimulation, type Asset } from '../resources/assets/assets.js';
import { checkPixels } from '../resources/assets/pixels.js';
import { receiveUpload, type ReceivedUpload } from '../http/multipart.js';
import { assetView, uploadView } from '../resources/assets/views.js';

/** Spec 4.13 and 8: the asset list pages 1-100 assets, 50 by default. */
export const ASSET_PAGE = { min: 1, max: 100, default: 50 } as const;

/**
 * `subject_consent` of a form (spec 4.12 and 9): one of the three values, or the legacy alias
 * `third_party_with_permission` for `permission`. Absent or blank is `null`; anything else is `false`.
 */
export function parseSubjectConsent(value: string | undefined): SubjectConsent | null | false {
  // An HTML form sends a blank field for an unanswered input: that is no declaration, not a bad one.
  if (value === undefined || value.trim() === '') return null;
  if (value === 'third_party_with_permission') return 'permission';
  return (SUBJECT_CONSENTS as readonly string[]).includes(value) ? (value as SubjectConsent) : false;
}

/**
 * POST /assets (spec 4.12, 3.2): receives the multipart upload as it streams, checks that its pixels decode
 * within 50 megapixels (`checkPixels`: 400 bad_mime, 413 too_large), checks its form fields, and
 * keeps the file once per sha256 (identical bytes from the same account answer the existing asset with
 * `deduped: true`). Moderation then runs on the simulated clock (5-60 s, or 0.5-2 s at `--speed fast`).
 * The form field `simulate` takes `rejected[:<reason>]` (accepted, then moderation ends rejected) and
 * `moderation_rejected[:<reason>]` (422 at once, nothing stored). Costs 0 credits. The temporary file is
 * removed on every refusal.
 * @example
 * http.createServer(async (req, res) => {
 *   const result = await uploadAsset(service, caller, req);
 *   res.writeHead(result.status, result.headers).end(JSON.stringify(result.body));
 * });
 */
export async function uploadAsset(service: Service, caller: Caller, req: IncomingMessage): Promise<Result> {
  const accepted = await acceptUpload(service, caller.account.id, req);
  return 'status' in accepted ? accepted : ok(200, uploadView(accepted.asset, accepted.deduped, service.origin));
}

/** What `acceptUpload` takes beyond the request. */
export interface AcceptUploadOptions {
  /**
   * Refuse an upload without `subject_consent` (422 consent_required, nothing stored), as the photo upload
   * page does; POST /assets leaves it optional (spec 4.12). @default false
   */
  requireConsent?: boolean;
}

/** An upload `acceptUpload` kept: the asset (new, or the account's one with the same bytes) and the consent declared. */
export interface AcceptedUpload {
  asset: Asset;
  deduped: boolean;
  /** `subject_consent` of this upload's form, which a deduped asset may not carry. */
  subjectConsent: SubjectConsent | null;
}

/**
 * The whole of POST /assets but its response: what `uploadAsset` and the photo upload page share, so a
 * photo from the page is read, checked, stored and moderated exactly as one sent to the API.
 * @example const accepted = await acceptUpload(service, accountId, req, { requireConsent: true }); // AcceptedUpload | Result
 */
export async function acceptUpload(service: Service, accountId: number, req: IncomingMessage, { requireConsent = false }: AcceptUploadOptions = {}): Promise<AcceptedUpload | Result> {
  const received = await receiveUpload(req, { dir: join(service.filesDir, 'uploads') });
  if (!received.ok) return refused(received.refusal);
  const upload = received.value;
  // Issue 20 item 2: what is kept must decode, within the pixel limit, or every job that uses it fails.
  const pixels = await checkPixels(upload.path, upload.mime);
  if (!pixels.ok) {
    await rm(upload.path, { force: true });
    return fail(pixels.code, { detail: pixels.detail, ...(pixels.extra ? { extra: pixels.extra } : {}) });
  }
  const refusal = checkFields(upload, requireConsent);
  if (refusal) {
    await rm(upload.path, { force: true });
    return refusal;
  }
  const simulation = parseAssetSimulation(upload.fields.simulate);
  if (simulation?.kind === 'moderation_rejected') {
    await rm(upload.path, { force: true });
    return fail('moderation_rejected', { detail: 'The photo failed moderation; nothing was stored. Send another photo.', extra: { reason_code: simulation.reason } });
  }
  const previous = sameBytes(service, accountId, upload.sha256);
  // The same bytes were rejected before: answering that asset would show a status the upload response never has (spec 2.6).
  if (previous?.status === 'rejected') {
    await rm(upload.path, { force: true });
    return fail('moderation_rejected', { detail: `These bytes are asset ${previous.id}, which failed moderation. Send another photo.`, extra: { reason_code: previous.reasonCode ?? 'explicit_content' } });
  }
  const subjectConsent = parseSubjectConsent(upload.fields.subject_consent) || null;
  let added: { asset: Asset; deduped: boolean };
  try {
    // One synchronous turn from placing the file to recording the asset, as deleteAsset removes files in one
    // turn too: a delete of the same bytes cannot remove a file this upload has just counted on.
    placeFile(upload.path, service.assetPath(upload.sha256, upload.ext));
    added = service.assets.add({
      accountId, sha256: upload.sha256, name: upload.name || `upload.${upload.ext}`, fileSize: upload.size,
      mimeType: upload.mime, ext: upload.ext, subjectConsent,
      ...(simulation?.kind === 'rejected' ? { rejectAs: simulation.reason } : {}),
    });
  } catch {
    await rm(upload.path, { force: true });
    return fail('internal_error', { detail: 'The upload could not be stored; try again.' });
  }
  await service.store.commit();
  return { ...added, subjectConsent };
}

/** The 400s of the form fields (spec 4.12): `subject_consent`, and `sha256` when given; 422 consent_required where consent is required. */
function checkFields(upload: ReceivedUpload, requireConsent: boolean): Result | null {
  const consent = parseSubjectConsent(upload.fields.subject_consent);
  if (consent === false) {
    return fail('invalid_subject_consent', { detail: 'subject_consent is self, permission or no_real_person.', extra: { allowed_values: SUBJECT_CONSENTS } });
  }
  if (consent === null && requireConsent) {
    return fail('consent_required', { detail: 'Say who is in the photo: yourself (self), someone who agreed (permission), or no real person (no_real_person).', extra: { allowed_values: SUBJECT_CONSENTS } });
  }
  const declared = upload.fields.sha256;
  if (declared === undefined || declared === '') return null;
  // The spec names no code for a bad sha256; invalid_parameter is ours for a request value that is malformed.
  if (!/^[0-9a-f]{64}$/.test(declared)) return fail('invalid_parameter', { detail: 'sha256 is 64 lowercase hex characters.', extra: { parameter: 'sha256' } });
  if (declared !== upload.sha256) {
    return fail('invalid_parameter', { detail: 'sha256 does not match the file: the bytes received hash differently, so the upload was cut or changed.', extra: { parameter: 'sha256' } });
  }
  return null;
}

/** The account's asset with these bytes, if any (what `Assets.add` would dedupe to). */
function sameBytes(service: Service, accountId: number, sha256: string): Asset | undefined {
  for (const asset of service.store.table('asset').values()) if (asset.accountId === accountId && asset.sha256 === sha256) return asset;
  return undefined;
}

/** Moves a received file to its place, or drops it when the same bytes are already kept there (files are shared by sha256). */
function placeFile(from: string, to: string): void {
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

/** The caller's asset `id` (a path segment), or the 404 of spec 4.14: unknown ids and other accounts' look the same. */
function own(service: Service, caller: Caller, id: string): Asset | Result {
  const asset = /^[1-9]\d{0,15}$/.test(id) ? service.assets.get(caller.account.id, Number(id)) : undefined;
  return asset ?? fail('not_found', { detail: `No asset ${id}.` });
}

const isResult = (value: Asset | Result): value is Result => !('sha256' in value);

/**
 * GET /assets/{id} (spec 4.14): the asset with its moderation status.
 * @example getAsset(service, caller, '1') // { status: 200, body: { id: 1, status: 'trusted', asset_uri: 'asset://1', … } }
 */
export function getAsset(service: Service, caller: Caller, id: string): Result {
  const asset = own(service, caller, id);
  return isResult(asset) ? asset : ok(200, assetView(asset, service.origin));
}

/**
 * GET /assets (spec 4.13): the caller's trusted image assets that can be used now (a character photo past
 * its 30 days is left out), newest first; `limit` 1-100 (50), `offset` >= 0. The envelope is not shown by
 * the spec: `{ data, total, limit, offset }`, as the video list's.
 * @example listAssets(service, caller, { limit: '10' }) // { status: 200, body: { data: […], total: 3, limit: 10, offset: 0 } }
 */
export function listAssets(service: Service, caller: Caller, query: Record<string, unknown>): Result {
  const limit = integer(query.limit, ASSET_PAGE.default, ASSET_PAGE.min, ASSET_PAGE.max);
  const offset = integer(query.offset, 0, 0, Number.MAX_SAFE_INTEGER);
  if (limit === null) return fail('invalid_parameter', { detail: `limit is an integer from ${ASSET_PAGE.min} to ${ASSET_PAGE.max}.` });
  if (offset === null) return fail('invalid_parameter', { detail: 'offset is an integer >= 0.' });
  const trusted = service.assets.listTrusted(caller.account.id).filter((asset) => service.assets.usable(asset));
  return ok(200, { data: trusted.slice(offset, offset + limit).map((asset) => assetView(asset, service.origin)), total: trusted.length, limit, offset });
}

/**
 * DELETE /assets/{id} (spec 4.15): the asset goes, and its file too once no asset of any account uses
 * those bytes. Its public_url stops working at once.
 * @example deleteAsset(service, caller, '1') // { status: 200, body: { success: true, id: 1 } }
 */
export async function deleteAsset(service: Service, caller: Caller, id: string): Promise<Result> {
  const asset = own(service, caller, id);
  if (isResult(asset)) return asset;
  const dropFile = removeAsset(service, asset);
  // The file goes once the removal is saved: a removal taken back (a failed write) keeps a working asset.
  await service.store.commit();
  dropFile();
  return ok(200, { success: true, id: asset.id });
}

/**
 * Removes an asset, and returns what removes its file once that removal is saved: the file goes then if no
 * asset (of any account) uses those bytes, checked and removed in one synchronous turn (see uploadAsset).
 * Also used when a character job's images are deleted.
 */
export function removeAsset(service: Service, asset: Asset): () => void {
  service.assets.remove(asset);
  return () => {
    if (!service.assets.fileInUse(asset.sha256)) rmSync(service.assetPath(asset.sha256, asset.ext), { force: true });
  };
}

/**
 * The file behind an asset's public_url, `/files/assets/<token>.<ext>` (spec 2.6): no key, the
 * unguessable token is the credential. `token` is the last path segment, with or without its extension
 * (which must then be the asset's). `null` for an unknown or deleted asset, or one moderation rejected.
 * @example assetFile(service, 'Zm9vYmFyYmF6cXV4MTIzNA.png') // { path: '…/assets/<sha256>.png', mime: 'image/png' }
 */
export function assetFile(service: Service, token: string): { path: string; mime: string } | null {
  const match = /^([A-Za-z0-9_-]{1,64})(?:\.([a-z0-9]{1,5}))?$/.exec(token);
  if (!match) return null;
  const asset = service.assets.byToken(match[1]!);
  if (!asset || asset.status === 'rejected' || (match[2] !== undefined && match[2] !== asset.ext)) return null;
  const path = service.assetPath(asset.sha256, asset.ext);
  return existsSync(path) ? { path, mime: asset.mimeType } : null;
}

/** A query integer within bounds, its default when absent, or `null` when it is not one. */
function integer(value: unknown, fallback: number, min: number, max: number): number | null {
  if (value === undefined || value === '') return fallback;
  // A string from a query, or a number from the assistant's tools.
  if (!(typeof value === 'string' && /^\d{1,16}$/.test(value)) && !Number.isSafeInteger(value)) return null;
  const number = Number(value);
  return number >= min && number <= max ? number : null;
}
