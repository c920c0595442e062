import type { TrustLevel } from '../../contract/assets.js';
import type { Asset } from './assets.js';

/** `trust_level` of spec 2.6 (its values are not shown): where the asset stands in moderation. */
export function trustLevel(asset: Asset): TrustLevel {
  if (asset.status === 'rejected') return 'rejected';
  if (asset.status === 'pending') return 'unverified';
  return asset.trustedUntil !== null ? 'generated' : 'moderated';
}

/** The public link of an asset's file: unguessable, no key needed (spec 2.6 `public_url`). */
export function assetPublicUrl(origin: string, asset: Asset): string {
  return `${origin}/files/assets/${asset.token}.${asset.ext}`;
}

/** `asset://<id>`, once the asset may be used in image_urls (spec 4.1: moderated assets only). */
export function assetUri(asset: Asset): string | null {
  return asset.status === 'trusted' ? `asset://${asset.id}` : null;
}

/** The 200 of POST /assets (spec 2.6, upload response). */
export function uploadView(asset: Asset, deduped: boolean, origin: string) {
  return {
    id: asset.id,
    // An upload answers pending or trusted only; accept() refuses bytes that were rejected (spec 2.6).
    status: asset.status as 'pending' | 'trusted',
    asset_uri: assetUri(asset),
    public_url: assetPublicUrl(origin, asset),
    name: asset.name,
    file_size: asset.fileSize,
    mime_type: asset.mimeType,
    trust_level: trustLevel(asset),
    subject_consent: asset.subjectConsent,
    deduped,
    created_at: new Date(asset.createdAt).toISOString(),
  };
}

/**
 * GET /assets/{id} and the items of GET /assets (spec 2.6: id, name, status, public_url, asset_uri;
 * "further fields: not shown", so the upload response's other fields are added, and `reason_code` once rejected).
 */
export function assetView(asset: Asset, origin: string) {
  const { deduped: _deduped, ...rest } = uploadView(asset, false, origin);
  return { ...rest, reason_code: asset.reasonCode };
}
