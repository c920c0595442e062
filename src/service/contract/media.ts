import { z } from 'zod';
import { rule } from './problems.js';

// Spec 4.18: GET /media/{file}, where the signature is the credential.

/** Spec 4.18: "digits followed by .mp4 or .jpg". */
export const MEDIA_FILE = /^([1-9]\d{0,15})\.(mp4|jpg)$/;

export const MediaPath = z.object({
  file: rule(z.string().regex(MEDIA_FILE), { code: 'not_found', detail: () => 'A media file is <clip id>.mp4 or <clip id>.jpg.' }).meta({ description: '<clip id>.mp4 or <clip id>.jpg' }),
});

/** `exp` and `sig` are checked together by the signer: a missing or malformed one is 403 invalid_signature. */
const signature = { code: 'invalid_signature', detail: () => 'The link is not signed by this service, or was changed.' } as const;

export const MediaQuery = z.object({
  // The 12 digits the signer reads, as the maximum the document gives.
  exp: rule(z.string().regex(/^\d{1,12}$/).transform(Number).pipe(z.int().min(0).max(999_999_999_999)), signature).meta({ description: 'Expiry, Unix seconds.' }),
  sig: rule(z.string().regex(/^[0-9a-f]{64}$/), signature),
  download: z.string().meta({ description: '1: download instead of play.' }).optional(),
});
