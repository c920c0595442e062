import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Asset } from '../assets/assets.js';
import type { ServiceStore, Table, TableIndex } from '../../core/store.js';
import type { SubjectConsent } from '../../contract/common.js';

/** How long an upload link works, on the service's simulated clock. */
export const PHOTO_UPLOAD_TTL_MS = 60 * 60 * 1000;

/** Expired links are kept this long (so the page can say "expired" rather than "unknown"), then dropped. */
const KEEP_EXPIRED_MS = 7 * 24 * 60 * 60 * 1000;

/** The page a person opens to upload a photo for an assistant: `/photos/upload/<token>`. */
export const PHOTO_UPLOAD_PATH = '/photos/upload';

/**
 * An upload link made by `start_photo_upload` (spec 5.7: "assistants cannot send photos"). The token in its
 * URL is the credential; only its SHA-256 is kept, so the data file does not hold working links.
 */
export interface PhotoUpload {
  /** `upl_…`: what the assistant names the upload by in get_photo. Not the token. */
  id: string;
  accountId: number;
  /** The API key (the assistant) that asked for the link. */
  keyId: string;
  /** Lowercase hex SHA-256 of the URL's token. */
  tokenHash: string;
  createdAt: number;
  expiresAt: number;
  /** Set once a photo was accepted: the link is single use. */
  usedAt: number | null;
  /** The asset the photo became. */
  assetId: number | null;
  /** Who the person said is in the photo (spec 5, consent rules), recorded with this upload. */
  subjectConsent: SubjectConsent | null;
}

export interface PhotoUploadTables {
  photo_upload: PhotoUpload;
}

/** Why a token does not open the page: unknown (404), or expired or already used (410). */
export type LinkState = { ok: true; upload: PhotoUpload } | { ok: false; reason: 'unknown' | 'expired' | 'used'; upload?: PhotoUpload };

export interface PhotoUploadEvents {
  /** A photo was accepted on a link. */
  uploaded: [upload: PhotoUpload];
}

const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * The upload links of the assistant endpoint: made for an account, opened by token, used once. Kept in
 * the service's store, so a link outlives a restart; expiry reads the simulated clock.
 * @example
 * const { upload, token } = uploads.create({ accountId: 1, keyId: 'key_1' });
 * uploads.open(token) // { ok: true, upload }
 */
export class PhotoUploads extends EventEmitter<PhotoUploadEvents> {
  readonly #table: Table<PhotoUpload>;
  readonly #now: () => number;
  // Indexes of the photo_upload table, which keeps them in step (a rollback included).
  /** Token hashes to uploads: the page looks here on every request. */
  readonly #byHash: TableIndex<PhotoUpload, string>;
  /** The upload that made each asset: a clip's consent reads it, whatever other accounts uploaded. */
  readonly #byAsset: TableIndex<PhotoUpload, number>;
  /** The links not used yet: what the pruning reads, never the used ones a photo's consent keeps (one key). */
  readonly #unused: TableIndex<PhotoUpload, 'unused'>;

  /** The time long-expired links are dropped by: the service's own, which no account's time is behind. */
  readonly #sweepNow: () => number;

  /** An account's time: a link (opened without a key) expires on its owner's time. */
  readonly #nowOf: (account: number) => number;

  constructor(store: ServiceStore<PhotoUploadTables>, now: () => number, { sweepNow = now, nowOf = () => now() }: { sweepNow?: () => number; nowOf?: (account: number) => number } = {}) {
    super();
    this.#sweepNow = sweepNow;
    this.#nowOf = nowOf;
    this.#table = store.table('photo_upload');
    this.#now = now;
    this.#byHash = this.#table.index('tokenHash', (upload) => upload.tokenHash);
    this.#byAsset = this.#table.index('assetId', (upload) => upload.assetId);
    this.#unused = this.#table.index('unused', (upload) => (upload.usedAt === null ? 'unused' : undefined));
  }

  /** A new link for `accountId`: the upload and its token (32 random bytes, base64url), which is shown once. */
  create({ accountId, keyId }: { accountId: number; keyId: string }): { upload: PhotoUpload; token: string } {
    this.#prune();
    const token = randomBytes(32).toString('base64url');
    const now = this.#now();
    const upload = this.#table.put({
      id: `upl_${randomBytes(12).toString('base64url')}`,
      accountId,
      keyId,
      tokenHash: hashToken(token),
      createdAt: now,
      expiresAt: now + PHOTO_UPLOAD_TTL_MS,
      usedAt: null,
      assetId: null,
      subjectConsent: null,
    });
    return { upload, token };
  }

  /** The account's upload `id`, or undefined (another account's upload does not exist for it). */
  get(accountId: number, id: string): PhotoUpload | undefined {
    const upload = this.#table.get(id);
    return upload && upload.accountId === accountId ? upload : undefined;
  }

  /** The upload that made asset `assetId`, if one did. */
  byAsset(accountId: number, assetId: number): PhotoUpload | undefined {
    return this.#byAsset.get(assetId).find((upload) => upload.accountId === accountId);
  }

  /** Who is in a photo: what the person said on the upload page that made it, else what was recorded with the asset. */
  consentOf(asset: Asset): SubjectConsent | null {
    return this.byAsset(asset.accountId, asset.id)?.subjectConsent ?? asset.subjectConsent;
  }

  /** What a token opens: its upload while it works, or why not. A used link says so even once it would have expired. */
  open(token: string): LinkState {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { ok: false, reason: 'unknown' };
    // Looked up by the token's hash: the timing of a map lookup tells nothing about a token's characters.
    const upload = this.#byHash.first(hashToken(token));
    if (!upload) return { ok: false, reason: 'unknown' };
    if (upload.usedAt !== null) return { ok: false, reason: 'used', upload };
    if (this.expired(upload)) return { ok: false, reason: 'expired', upload };
    return { ok: true, upload };
  }

  expired(upload: PhotoUpload): boolean {
    return upload.usedAt === null && this.#nowOf(upload.accountId) >= upload.expiresAt;
  }

  /** Records the accepted photo: the link is used from now on. */
  markUsed(upload: PhotoUpload, { assetId, subjectConsent }: { assetId: number; subjectConsent: SubjectConsent }): PhotoUpload {
    upload.usedAt = this.#nowOf(upload.accountId);
    upload.assetId = assetId;
    upload.subjectConsent = subjectConsent;
    this.#table.put(upload);
    this.emit('uploaded', upload);
    return upload;
  }

  /**
   * Drops links that expired unused long ago; used ones stay, as they tie a photo to its consent. It reads
   * the unused links only (those of the last week and an hour), so a new link costs nothing of the photos
   * ever uploaded.
   */
  #prune(): void {
    const before = this.#sweepNow() - KEEP_EXPIRED_MS;
    for (const upload of this.#unused.get('unused')) {
      if (upload.expiresAt < before) this.#table.remove(upload.id);
    }
  }
}
