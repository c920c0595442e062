/** What a person can do about an error (spec section 7, `user_action.kind`); the service's contract lists these. */
export const USER_ACTION_KINDS = Object.freeze(['top_up', 'confirm_consent', 'raise_budget', 'upload_photo', 'contact_support'] as const);
export type UserActionKind = (typeof USER_ACTION_KINDS)[number];

interface CodeSpec {
  status: number;
  title: string;
  /** True when the same request can later succeed unchanged. */
  retryable: boolean;
  userAction?: UserActionKind;
}

const spec = (status: number, title: string, retryable = false, userAction?: UserActionKind): CodeSpec =>
  userAction ? { status, title, retryable, userAction } : { status, title, retryable };

/**
 * Every stable error code, with its HTTP status and whether a retry can succeed. The service's codes come
 * from spec section 7; the receiver, emitter and relay add their own at the end. One table for all.
 */
export const PROBLEM_CODES = {
  // 400: fix the input
  missing_input: spec(400, 'No prompt and no images'),
  invalid_duration: spec(400, 'Invalid duration'),
  invalid_ratio: spec(400, 'Invalid ratio'),
  invalid_model: spec(400, 'Invalid model'),
  invalid_resolution: spec(400, 'Invalid resolution'),
  resolution_model_mismatch: spec(400, 'Resolution does not match the model'),
  too_many_images: spec(400, 'Too many images'),
  invalid_image_url: spec(400, 'Invalid image URL'),
  invalid_asset_id: spec(400, 'Invalid asset id'),
  invalid_callback_url: spec(400, 'Invalid callback URL'),
  batch_too_large: spec(400, 'Batch too large'),
  invalid_json: spec(400, 'Invalid JSON'),
  invalid_idempotency_key: spec(400, 'Invalid Idempotency-Key'),
  not_failed: spec(400, 'Task has not failed'),
  not_retryable: spec(400, 'Task cannot be retried'),
  cannot_retry_a_retry: spec(400, 'A retry cannot be retried'),
  preset_not_found: spec(400, 'Template not found'),
  field_required: spec(400, 'Template field required'),
  photos_required: spec(400, 'Photos required'),
  character_no_photos: spec(400, 'Characters take no photos'),
  no_file: spec(400, 'No file'),
  bad_mime: spec(400, 'Unsupported file type'),
  reference_media_unavailable: spec(400, 'Reference video and audio are not offered'),
  // Spec 4.12 names this refusal ("400 … invalid subject_consent") without a code: ours.
  invalid_subject_consent: spec(400, 'Invalid subject_consent'),
  // Query and path parameters (limit, offset, status, before, wait, ids): the spec shows no code for them.
  invalid_parameter: spec(400, 'Invalid parameter'),
  // 401-404
  invalid_auth_header: spec(401, 'Missing or malformed Authorization header'),
  invalid_api_key: spec(401, 'Invalid API key'),
  // Spec 7: retryable means "the same request can later succeed unchanged"; its table says 402 does after a
  // top-up and 451 from a supported country. retry_after stays null: waiting alone does not help.
  insufficient_credits: spec(402, 'Insufficient credits', true, 'top_up'),
  invalid_signature: spec(403, 'Invalid signature'),
  not_found: spec(404, 'Not found'),
  // 409-413
  idempotency_in_progress: spec(409, 'A request with this Idempotency-Key is still running', true),
  already_rendering: spec(409, 'The clip is already rendering'),
  already_retried: spec(409, 'The task was already retried'),
  // Spec 5.2 limits an account to 5 keys without naming the refusal: ours.
  key_limit_reached: spec(409, 'API key limit reached'),
  retry_in_progress: spec(409, 'A retry is starting'),
  media_not_ready: spec(409, 'Media not ready', true),
  link_expired: spec(410, 'Link expired'),
  // A Range header outside a media file (RFC 9110 §15.5.17); the spec shows Range support, not this refusal.
  range_not_satisfiable: spec(416, 'Range not satisfiable'),
  too_large: spec(413, 'File too large'),
  body_too_large: spec(413, 'Body too large'),
  // 422
  consent_required: spec(422, 'Consent required', false, 'confirm_consent'),
  photo_rejected: spec(422, 'Photo rejected', false, 'upload_photo'),
  moderation_rejected: spec(422, 'Photo rejected by moderation', false, 'upload_photo'),
  image_fetch_failed: spec(422, 'Image download failed', false, 'upload_photo'),
  idempotency_key_reused: spec(422, 'Idempotency-Key reused with a different body'),
  prompt_blocked: spec(422, 'Prompt blocked'),
  document_blocked: spec(422, 'Document blocked'),
  religious_text: spec(422, 'Religious text is not drawn'),
  minor_blocked: spec(422, 'Minors are not allowed'),
  text_script_unsupported: spec(422, 'Text script unsupported'),
  cost_exceeds_max: spec(422, 'Cost exceeds max_credits', false, 'raise_budget'),
  // 429, 451
  rate_limit_exceeded: spec(429, 'Rate limit exceeded', true),
  concurrency_limit: spec(429, 'Too many image jobs at once', true),
  rate_limited: spec(429, 'Too many image jobs', true),
  region_unavailable: spec(451, 'Unavailable in this region', true),
  // 5xx: temporary; bodies carry no internal details
  internal_error: spec(500, 'Internal error', true),
  task_create_failed: spec(500, 'Task could not be created', true),
  upstream_busy: spec(503, 'Upstream busy', true),
  no_session_available: spec(503, 'No session available', true),
  moderation_pending: spec(503, 'Moderation pending', true),
  generation_paused: spec(503, 'Generation paused', true),

  // receiver (cliphook): why a webhook request was refused
  missing_signature: spec(401, 'Missing X-Service-Signature'),
  malformed_signature: spec(400, 'Malformed X-Service-Signature'),
  missing_delivery_id: spec(400, 'Missing X-Service-Delivery'),
  invalid_payload: spec(400, 'Payload does not match the webhook schema'),
  stale_delivery: spec(400, 'Delivery outside the replay window'),
  // The body was still arriving when the receiver's `bodyTimeout` passed (RFC 9110 §15.5.9): sent whole, the same request succeeds.
  body_timeout: spec(408, 'Body not received in time', true),
  body_already_parsed: spec(500, 'Body already parsed by another middleware', true),
  delivery_in_progress: spec(503, 'This delivery is still being processed', true),
  // The delivery store (Redis, say) did not answer the claim: nothing ran, so the sender's retry is safe.
  store_unavailable: spec(503, 'Delivery store unavailable', true),
  // The receiver's inbox holds `maxPending` events: nothing was taken, the sender's retry is safe.
  inbox_full: spec(503, 'The webhook inbox is full', true),
  // relay (cliphook)
  no_listener: spec(503, 'No listener connected', true),
  local_unreachable: spec(502, 'Local app unreachable', true),
  local_timeout: spec(504, 'Local app did not answer in time', true),
  invalid_token: spec(401, 'Invalid listening token'),
  method_not_allowed: spec(405, 'Method not allowed'),
  invalid_path: spec(400, 'Path not allowed under the channel'),
  relay_full: spec(507, 'Relay storage full', true),
  // A relay on Redis that cannot reach it keeps nothing and says so, rather than hang or claim "buffered".
  relay_unavailable: spec(503, 'Relay storage unavailable', true),
  // inspector (cliphook): the local page of listen, serve and dev
  host_not_allowed: spec(403, 'Host not allowed'),
  origin_not_allowed: spec(403, 'Cross-origin request refused'),
  unsupported_media_type: spec(415, 'Send application/json'),
  replay_unavailable: spec(409, 'This request cannot be replayed'),
  // assistant endpoint (cliphook): an OAuth access token without the `mcp` scope (RFC 6750 §3.1)
  insufficient_scope: spec(403, 'Insufficient scope'),
  // service pages (cliphook): the photo upload link of the assistant endpoint
  link_used: spec(410, 'Link already used'),
  upload_in_progress: spec(409, 'An upload on this link is in progress', true),
} as const satisfies Record<string, CodeSpec>;

/** A stable machine-readable error code. */
export type ProblemCode = keyof typeof PROBLEM_CODES;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** An RFC 9457 problem body with every member of spec section 7. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string | null;
  code: string;
  /** Legacy message kept for older clients. */
  error: string;
  retryable: boolean;
  retry_after: number | null;
  user_action: { kind: UserActionKind; url: string | null } | null;
  trace_id: string;
  [extension: string]: unknown;
}

export interface ProblemOptions {
  /** Human sentence for this occurrence; defaults to the code's title. */
  detail?: string;
  /** The request path or URI this problem is about. */
  instance?: string;
  /** Seconds after which a retry may succeed; also sent as `Retry-After`. */
  retryAfter?: number;
  /** Overrides the table's status, for a code reused in another context. */
  status?: number;
  traceId?: string;
  userActionUrl?: string;
  /** Extra members for this code: `required`, `balance`, `item_index`, `reason_code`, … (one named like a standard member is left out). */
  extra?: Record<string, unknown>;
}

/** True when `code` is in the table. */
export function isProblemCode(code: string): code is ProblemCode {
  return Object.hasOwn(PROBLEM_CODES, code);
}

/**
 * Builds the problem body for `code`.
 * @example problem('insufficient_credits', { extra: { required: 45, balance: 12 } })
 */
export function problem(code: ProblemCode, options: ProblemOptions = {}): Problem {
  const entry: CodeSpec = PROBLEM_CODES[code];
  const status = options.status ?? entry.status;
  // Spec section 7: 5xx bodies carry no internal details, so the detail of a 5xx is the caller's choice
  // of a safe sentence, never an exception message.
  const detail = options.detail ?? entry.title;
  const body: Problem = {
    type: `urn:cliphook:problem:${code}`,
    title: entry.title,
    status,
    detail,
    instance: options.instance ?? null,
    code,
    error: detail,
    retryable: entry.retryable,
    retry_after: options.retryAfter ?? null,
    user_action: entry.userAction ? { kind: entry.userAction, url: options.userActionUrl ?? null } : null,
    trace_id: options.traceId ?? traceId(),
  };
  // The code's own members after the standard ones; an extra named like a standard member (`status`, `code`)
  // never replaces it, so a body always says what its code and status are.
  for (const [name, value] of Object.entries(options.extra ?? {})) if (!Object.hasOwn(body, name)) (body as unknown as Record<string, unknown>)[name] = value;
  return body;
}

/** 16 random hex digits from Web Crypto (global in Node 20 and every Fetch API runtime), so `cliphook/web` can build problems. */
function traceId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  let hex = '';
  for (let i = 0; i < bytes.length; i++) hex += bytes[i]!.toString(16).padStart(2, '0');
  return hex;
}

/** The response headers that go with a problem body. */
export function problemHeaders(body: Problem): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  if (body.retry_after !== null) headers['retry-after'] = String(body.retry_after);
  return headers;
}
