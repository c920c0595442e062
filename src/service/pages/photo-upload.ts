import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_ASSET_BYTES, MAX_ASSET_SIZE_TEXT } from '../contract/assets.js';
import { SUBJECT_CONSENTS, type SubjectConsent } from '../contract/common.js';
import { ServiceError } from '../contract/problems.js';
import { drain, receiveUpload } from '../http/multipart.js';
import { PHOTO_UPLOAD_PATH, type LinkState, type PhotoUpload, type PhotoUploads } from '../resources/photos/uploads.js';
import { fail, ok, type Result } from '../http/result.js';
import { problemHeaders } from '../../protocol/problem.js';
import type { Caller } from '../core/gate.js';
import { sendResult } from '../http/respond.js';
import type { AssetCommands } from '../resources/assets/commands.js';
import type { OperationRun } from '../runner/call.js';
import { routeOf } from '../contract/routes.js';
import { PageRequest, unanswered } from './run.js';
import { html, isSameOrigin, renderPage, sendPage, wantsHtml, type SafeHtml } from './page.js';
import type { Site } from '../core/site.js';

/**
 * The photo upload page of the assistant endpoint (spec 5.7): GET shows a form where a person
 * picks a photo and says who is in it; POST stores it as an asset of the link's account through POST
 * /assets' own command (`AssetCommands.accept`), with the consent required. The token in the path is the credential.
 * A browser (`Accept: text/html`) gets pages; the page's script and other clients get JSON and problem+json.
 */

/** The multipart body's room beyond the file: the consent field, part headers, boundaries (busboy caps fields at 16 × 1 KiB). */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/** The largest body POST reads: a 20 MB photo and its form. A larger declared `Content-Length` is refused before reading. */
export const MAX_PHOTO_FORM_BYTES = MAX_ASSET_BYTES + FORM_OVERHEAD_BYTES;

/** What a person reads for each refusal: the page's own words, not the API's (which names form parts). */
const MESSAGES: Partial<Record<string, string>> = {
  no_file: 'Choose a photo first.',
  bad_mime: 'This file is not a photo the service takes. Choose a JPG, PNG, WebP, GIF or HEIC image.',
  too_large: `This photo is larger than ${MAX_ASSET_SIZE_TEXT}. Choose a smaller one.`,
  consent_required: 'Choose who is in the photo.',
  invalid_subject_consent: 'Choose who is in the photo.',
  moderation_rejected: 'This photo cannot be used: it did not pass the service\'s checks. Choose another photo.',
  upload_in_progress: 'This photo is still being uploaded. Wait a moment.',
  origin_not_allowed: 'Uploads are taken from this page only. Open the link again and send the photo from there.',
};

/** What the photo upload page needs of the service, not the whole `Service`. */
export interface PhotoUploadParts {
  /** Where the page is served: uploads are taken from its own origin only. */
  site: Site;
  photoUploads: Pick<PhotoUploads, 'open' | 'markUsed'>;
  /** Where an upload is written while it is read. */
  uploadsDir: string;
  /** POST /v1/assets' own command (`AssetCommands.accept`). */
  assets: Pick<AssetCommands, 'accept'>;
  /** Who a link acts for: its account with its oldest live key (as an assistant signed in with OAuth), or `null` for an account gone. */
  callerOf(accountId: number): Caller | null;
  /**
   * The chain a page's upload runs, as a route's does: the journal, the answer, fault rules (as
   * `uploadAsset`), one unit of work, the command. No key, rate limit or 402 floor: the link's token is
   * the credential, checked here; no Idempotency-Key: a link takes one photo.
   */
  run: OperationRun;
}

/** Links uploads are in flight on: a second POST meanwhile is refused, so a link takes one photo only. */
const inFlight = new WeakMap<PhotoUploadParts, Set<string>>();

/**
 * GET /photos/upload/<token>: the form, or a page saying the link is unknown (404), expired or used (410).
 * @example router.add('GET', '/photos/upload/:token', (request, res) => showPhotoUpload(service, request, res));
 */
export async function showPhotoUpload(parts: Pick<PhotoUploadParts, 'photoUploads'>, { req, params }: { req: IncomingMessage; params: Record<string, string> }, res: ServerResponse): Promise<Result | undefined> {
  const link = parts.photoUploads.open(params.token ?? '');
  if (!link.ok) return refuse(req, res, linkProblem(link));
  return sendPage(res, 200, uploadForm(link.upload));
}

/**
 * POST /photos/upload/<token> (multipart/form-data: `file`, `subject_consent`): checks the origin, the
 * link and the declared size before reading, then stores the photo as POST /assets does and uses the
 * link up. A refused photo leaves nothing stored and the link working.
 * @example router.add('POST', '/photos/upload/:token', (request, res) => receivePhotoUpload(service, request, res), { rawBody: true });
 */
export async function receivePhotoUpload(parts: PhotoUploadParts, { req, params }: { req: IncomingMessage; params: Record<string, string> }, res: ServerResponse): Promise<Result | undefined> {
  if (!isSameOrigin(req, parts.site.origin)) {
    drain(req);
    return refuse(req, res, fail('origin_not_allowed', { detail: MESSAGES.origin_not_allowed! }));
  }
  const link = parts.photoUploads.open(params.token ?? '');
  const caller = link.ok ? parts.callerOf(link.upload.accountId) : null;
  if (!link.ok || !caller) {
    drain(req);
    return refuse(req, res, link.ok ? fail('not_found', { detail: 'This upload link does not work. Check that it was copied whole, or ask your assistant for a new one.' }) : linkProblem(link));
  }
  const { upload } = link;
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > MAX_PHOTO_FORM_BYTES) {
    drain(req);
    return refuse(req, res, fail('too_large', { detail: MESSAGES.too_large!, extra: { max_bytes: MAX_ASSET_BYTES } }), upload, { connection: 'close' });
  }
  const busy = inFlight.get(parts) ?? new Set<string>();
  inFlight.set(parts, busy);
  if (busy.has(upload.id)) {
    drain(req);
    return refuse(req, res, fail('upload_in_progress', { detail: MESSAGES.upload_in_progress!, retryAfter: 2 }), upload);
  }
  busy.add(upload.id);
  // POST /v1/assets' command on the link's account, read and kept in one unit of work; a refusal keeps nothing and the link working.
  const command = async () => {
    const received = await receiveUpload(req, { dir: parts.uploadsDir });
    if (!received.ok) throw new ServiceError(received.refusal.code, received.refusal.detail, received.refusal.extra ? { extra: received.refusal.extra } : {});
    const kept = await parts.assets.accept(upload.accountId, received.value, { requireConsent: true });
    parts.photoUploads.markUsed(upload, { assetId: kept.asset.id, subjectConsent: kept.subjectConsent! });
    return { object: 'photo_upload', upload_id: upload.id, status: 'received', asset_id: kept.asset.id, moderation: kept.asset.status, subject_consent: kept.subjectConsent };
  };
  try {
    // Answered inside the chain, so the journal sees the status sent.
    await parts.run(routeOf('uploadAsset'), command, new PageRequest(req, res, undefined, undefined, `${PHOTO_UPLOAD_PATH}/{token}`), (outcome) => {
      if (outcome.kind !== 'json' && !req.readableEnded) drain(req);
      const gone = unanswered(req, res, outcome);
      if (gone) return gone;
      if (outcome.kind === 'json') return void (wantsHtml(req) ? sendPage(res, 200, receivedPage()) : sendResult(res, ok(200, outcome.body, { 'cache-control': 'no-store' })));
      if (outcome.kind !== 'problem') return undefined;
      // The journal shows the path without its token; the client is told the path it asked.
      const body = { ...outcome.body, instance: (req.url ?? '/').split('?', 1)[0]! };
      const refused = refuse(req, res, { status: body.status, body, headers: problemHeaders(body) }, upload);
      if (refused) sendResult(res, refused);
      return undefined;
    }, { caller });
  } finally {
    busy.delete(upload.id);
  }
  return undefined;
}

/** 404 for a token no link has; 410 for a link that expired or took its photo. */
function linkProblem(link: Extract<LinkState, { ok: false }>): Result {
  if (link.reason === 'used') return fail('link_used', { detail: 'A photo was already uploaded with this link, which works once. Ask your assistant for a new link to send another.' });
  if (link.reason === 'expired') return fail('link_expired', { detail: 'This upload link has expired (links work for an hour). Ask your assistant for a new one.' });
  return fail('not_found', { detail: 'This upload link does not work. Check that it was copied whole, or ask your assistant for a new one.' });
}

/**
 * Answers a refusal: for a browser, a page with the message (the form again, when the link still works);
 * for a script, the problem+json, its `detail` the same message.
 */
function refuse(req: IncomingMessage, res: ServerResponse, result: Result, upload?: PhotoUpload, headers: Record<string, string> = {}): Result | undefined {
  const body = result.body as { code: string; detail: string };
  const detail = MESSAGES[body.code] ?? body.detail;
  const problem = { ...result, body: { ...body, detail, error: detail }, headers: { ...result.headers, 'cache-control': 'no-store', ...headers } };
  if (!wantsHtml(req)) return problem;
  const stillUsable = upload !== undefined && body.code !== 'link_used' && body.code !== 'link_expired';
  const document = stillUsable ? uploadForm(upload, detail) : renderPage({ title: 'This link does not work', main: notice('error', detail) });
  return sendPage(res, result.status, document, headers);
}

const notice = (kind: 'error' | 'success', text: string): SafeHtml =>
  html`<div class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}" tabindex="-1" id="message-box"><p>${text}</p></div>`;

/** The page's words for each consent of the contract, in its order, so the values are not restated. */
const CONSENT_WORDS: Readonly<Record<SubjectConsent, { label: string; hint: string }>> = {
  self: { label: 'Me', hint: 'I am in the photo, or the person my assistant acts for is.' },
  permission: { label: 'Someone who agreed', hint: 'The people in the photo agreed to its use in a video clip.' },
  no_real_person: { label: 'No real person', hint: 'Objects, pets, places or artwork.' },
};
const CONSENTS = SUBJECT_CONSENTS.map((value) => ({ value, ...CONSENT_WORDS[value] }));

/**
 * The form: the photo (with a preview once picked) and who is in it, required, with no default. It has no
 * `action`: it posts back to the page's own URL, so the token appears nowhere in the markup.
 */
function uploadForm(upload: PhotoUpload, error?: string): string {
  const expires = new Date(upload.expiresAt).toISOString();
  const main = html`<p>Your assistant asked for a photo to use in a video clip. It is stored in your cliphook account only.
This link works once, until <time datetime="${expires}">${expires.slice(0, 16).replace('T', ' ')} UTC</time>.</p>
<div id="message" aria-live="polite">${error ? notice('error', error) : null}</div>
<form id="photo-upload" method="post" enctype="multipart/form-data" data-max-bytes="${MAX_ASSET_BYTES}">
<div class="field">
<label for="photo-file">Photo</label>
<input type="file" id="photo-file" name="file" required accept="image/jpeg,image/png,image/webp,image/gif,image/heic,image/heif,.jpg,.jpeg,.png,.webp,.gif,.heic,.heif" aria-describedby="photo-file-hint">
<p class="hint" id="photo-file-hint">JPG, PNG, WebP, GIF or HEIC, up to ${MAX_ASSET_SIZE_TEXT}.</p>
<img class="preview" id="photo-preview" alt="Preview of the chosen photo" hidden>
</div>
<fieldset id="photo-consent" aria-describedby="photo-consent-hint">
<legend>Who is in this photo? (required)</legend>
<p class="hint" id="photo-consent-hint">Only send photos of people who agreed to it.</p>
${CONSENTS.map(
  ({ value, label, hint }) => html`<div class="choice">
<input type="radio" id="consent-${value}" name="subject_consent" value="${value}" required aria-describedby="consent-${value}-hint">
<label for="consent-${value}">${label}</label>
<p class="hint" id="consent-${value}-hint">${hint}</p>
</div>
`,
)}</fieldset>
<button type="submit" id="photo-submit">Upload photo</button>
</form>
<div id="photo-received" hidden>${received()}</div>`;
  return renderPage({ title: 'Upload a photo', main, scripts: ['photo-upload.js'] });
}

function received(): SafeHtml {
  return html`<div class="notice success" role="status" tabindex="-1" id="photo-received-notice"><p><strong>Photo received.</strong> It is being checked, which takes from a few seconds to a minute.</p>
<p>You can close this page and go back to your assistant: it can see the photo now.</p></div>`;
}

/** The answer to a form posted without the page's script. */
function receivedPage(): string {
  return renderPage({ title: 'Photo received', main: received() });
}
