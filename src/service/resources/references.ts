import { assetUriId, CONSENTS_STRICTEST_FIRST, type SubjectConsent } from '../contract/common.js';
import { ServiceError } from '../contract/problems.js';
import type { FetchedBytes, ImageFetcher } from '../core/fetch-image.js';
import type { Asset, Assets } from './assets/assets.js';

/** An external photo downloaded for a request: kept as a pending asset only if moderation is slow (503 moderation_pending). */
export interface Fetched extends FetchedBytes {
  url: string;
}

export interface ReferencesOptions {
  assets: Assets;
  /** The trusted asset behind one of the account's AI character photo links (spec 2.7), while it is usable. */
  character: (accountId: number, url: string) => Asset | undefined;
  fetchImage: ImageFetcher;
  /** `--strict`: image URLs are https only and never private (spec 4.1). */
  strict: boolean;
}

/**
 * The reference photos of a request (spec 4.1, 4.7 and 5), as clips and images share them: the caller's own
 * trusted assets by id, `asset://` URIs of them, the service's own AI character photos by their link (usable
 * until `trusted_until`), and other URLs downloaded and checked as the service would.
 */
export class References {
  readonly #options: ReferencesOptions;

  constructor(options: ReferencesOptions) {
    this.#options = options;
  }

  /** The caller's asset `id` when it may be used now (trusted, and not past a character's 30 days). */
  usable(accountId: number, id: number): Asset | undefined {
    const asset = this.#options.assets.get(accountId, id);
    return asset && this.#options.assets.usable(asset) ? asset : undefined;
  }

  /** Whether `url` is one of the account's AI character photos, still usable (spec 2.7). */
  isCharacter(accountId: number, url: string): boolean {
    return this.#options.character(accountId, url) !== undefined;
  }

  /**
   * The consent recorded with the caller's assets `ids` when they were uploaded (spec 4.12), the strictest
   * first: `permission` (another person's photo) over `self` over `no_real_person`; `null` when none has one.
   */
  recordedConsent(accountId: number, ids: readonly number[]): SubjectConsent | null {
    const recorded = new Set(ids.map((id) => this.#options.assets.get(accountId, id)?.subjectConsent ?? null));
    return CONSENTS_STRICTEST_FIRST.find((consent) => recorded.has(consent)) ?? null;
  }

  /** Every id names a usable asset of the caller's, or 400 invalid_asset_id. */
  assetIds(accountId: number, ids: readonly number[]): void {
    const bad = ids.find((id) => !this.usable(accountId, id));
    if (bad !== undefined) throw new ServiceError('invalid_asset_id', `Asset ${bad} is not yours, or not moderated yet.`);
  }

  /**
   * Checks `image_urls`: an `asset://` URI must name a usable asset of the caller's (400
   * invalid_image_url), a character link counts as its asset, any other URL is downloaded (422
   * image_fetch_failed, 400 invalid_image_url). Answers the asset ids used and the photos downloaded.
   */
  async imageUrls(accountId: number, urls: readonly string[], { prefix = '' }: { prefix?: string } = {}): Promise<{ assetIds: number[]; fetched: Fetched[] }> {
    const assetIds: number[] = [];
    const fetched: Fetched[] = [];
    for (const [index, url] of urls.entries()) {
      const id = assetUriId(url);
      if (id !== null) {
        if (!this.usable(accountId, id)) throw new ServiceError('invalid_image_url', `${prefix}image_urls[${index}]: ${url} is not one of your moderated assets.`);
        assetIds.push(id);
        continue;
      }
      // The caller's own character photo needs no download: it is a trusted asset already (spec 2.7).
      const character = this.#options.character(accountId, url);
      if (character) {
        assetIds.push(character.id);
        continue;
      }
      const result = await this.#options.fetchImage(url, { strict: this.#options.strict });
      if (!result.ok) throw new ServiceError(result.code, `${prefix}image_urls[${index}]: ${result.detail}`);
      if (result.bytes && result.mime && result.ext && result.sha256) fetched.push({ url, bytes: result.bytes, mime: result.mime, ext: result.ext, sha256: result.sha256 });
    }
    return { assetIds, fetched };
  }
}
