import { z } from 'zod';
import { canonicalConsent, Link, pathId, queryInteger, SubjectConsentInput, Timestamp, type SubjectConsent } from './common.js';
import { LIMITS } from './limits.js';
import { rule } from './problems.js';

// Assets: spec 2.6, 3.2 and 4.12-4.15, as data. The upload is read as it streams (assets/upload.ts); its
// text fields are checked here.

/** Spec 4.12 and 8: "up to 20 MB", read as MiB (20,971,520 bytes). */
export const MAX_ASSET_BYTES = LIMITS.assetBytes;
/** The size in the spec's words, for messages and pages: `20 MB`. */
export const MAX_ASSET_SIZE_TEXT = `${MAX_ASSET_BYTES / (1024 * 1024)} MB`;
/** Spec 4.12: jpg, png, webp, gif or heic. */
export const ASSET_MIME_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/heic'] as const;
/** What an asset may be, by its bytes (spec 4.12: jpg, png, webp, gif or heic; HEIF is HEIC's container). */
export const ASSET_TYPES: ReadonlyMap<string, string> = new Map([
  ['image/jpeg', 'jpg'],
  ['image/png', 'png'],
  ['image/webp', 'webp'],
  ['image/gif', 'gif'],
  ['image/heic', 'heic'],
  ['image/heif', 'heic'],
]);
export const ASSET_STATUSES = ['pending', 'trusted', 'rejected'] as const;
export type AssetStatus = (typeof ASSET_STATUSES)[number];
/** `trust_level` of spec 2.6 (its values are not shown; ours). */
export const TRUST_LEVELS = ['unverified', 'moderated', 'rejected', 'generated'] as const;
export type TrustLevel = (typeof TRUST_LEVELS)[number];
/** Reason codes a rejection carries (spec 7 `reason_code`; the values are not shown, these are ours). */
export const REASON_CODES = ['explicit_content', 'violence', 'minor_detected', 'public_figure', 'copyright', 'not_a_photo'] as const;
/** Spec 4.13 and 8: the asset list pages 1-100 assets, 50 by default. */
export const ASSET_PAGE = LIMITS.assetPage;

/** An HTML form sends a blank field for an unanswered input: that is no declaration, not a bad one. */
const blankIsAbsent = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

/** The text fields of POST /assets (spec 4.12); `file` is read as it streams and described in the document only. */
export const AssetFormFields = z.object({
  subject_consent: z.preprocess(blankIsAbsent, SubjectConsentInput.optional()),
  sha256: z.preprocess(
    blankIsAbsent,
    rule(z.string().regex(/^[0-9a-f]{64}$/), { code: 'invalid_parameter', detail: () => 'sha256 is 64 lowercase hex characters.' })
      .meta({ description: 'Optional SHA-256 of the file (64 lowercase hex characters), for deduplication; must match the bytes.' })
      .optional(),
  ),
  simulate: z.string().max(200).meta({ description: 'cliphook only: rejected[:<reason>] ends moderation rejected; moderation_rejected[:<reason>] answers 422 at once.' }).optional(),
});

/** The form fields, checked, with the consent alias resolved. */
export function assetForm(fields: z.output<typeof AssetFormFields>): { subjectConsent: SubjectConsent | null; sha256: string | null; simulate: string | null } {
  return { subjectConsent: fields.subject_consent === undefined ? null : canonicalConsent(fields.subject_consent), sha256: fields.sha256 ?? null, simulate: fields.simulate ?? null };
}

/** The multipart body as the document describes it. */
export const AssetUploadForm = z
  .object({
    file: z.string().meta({ format: 'binary', contentMediaType: 'application/octet-stream', description: 'jpg, png, webp, gif or heic; up to 20 MiB.' }),
    subject_consent: SubjectConsentInput.optional(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    simulate: z.string().optional(),
  })
  .meta({ id: 'AssetUploadForm' });

export const AssetListQuery = z.object({
  limit: queryInteger('limit', { min: ASSET_PAGE.min, max: ASSET_PAGE.max, fallback: ASSET_PAGE.default }),
  offset: queryInteger('offset', { min: 0, fallback: 0 }),
});
export const AssetPath = z.object({ id: pathId('asset') });

const ConsentValue = z.enum(['self', 'permission', 'no_real_person']);

/** Spec 2.6, the upload response (200 of POST /assets). */
export const AssetUpload = z
  .object({
    id: z.int(),
    status: z.enum(['pending', 'trusted']),
    asset_uri: z.string().nullable().meta({ description: 'asset://<id> once trusted, for image_urls.' }),
    public_url: Link,
    name: z.string(),
    file_size: z.int(),
    mime_type: z.string(),
    trust_level: z.enum(TRUST_LEVELS),
    subject_consent: ConsentValue.nullable(),
    deduped: z.boolean(),
    created_at: Timestamp.nullable(),
  })
  .meta({ id: 'AssetUpload' });

/** Spec 2.6, GET /assets/{id} and the items of GET /assets ("further fields: not shown", so the upload's, and `reason_code`). */
export const Asset = z
  .object({
    id: z.int(),
    status: z.enum(ASSET_STATUSES),
    asset_uri: z.string().nullable(),
    public_url: Link,
    name: z.string(),
    file_size: z.int(),
    mime_type: z.string(),
    trust_level: z.enum(TRUST_LEVELS),
    subject_consent: ConsentValue.nullable(),
    created_at: Timestamp.nullable(),
    reason_code: z.string().nullable(),
  })
  .meta({ id: 'Asset' });

export const AssetList = z.object({ data: z.array(Asset), total: z.int(), limit: z.int(), offset: z.int() }).meta({ id: 'AssetList' });
export const DeleteAssetResponse = z.object({ success: z.boolean(), id: z.int() }).meta({ id: 'DeleteAssetResponse' });
