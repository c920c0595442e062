import { PROBLEM_CODES, type ProblemCode } from '../../protocol/problem.js';
import { assistantCodeTable, effectsTable } from './assistant.js';
import { ASSET_MIME_TYPES, MAX_ASSET_SIZE_TEXT } from './assets.js';
import { LIMITS } from './limits.js';
import { API_DISCOUNT, assistantClipPrice, clipPrice, IMAGE_MEGAPIXELS, IMAGE_PRICES, MODEL_SPECS, VIDEO_MODELS } from './pricing.js';
import { commonProblems, ROUTES, type RouteSpec } from './routes.js';

// The docs' tables of the service, made from the contract: docs/service.md holds them between markers,
// `npm run docs` writes them, and a test fails when they are stale.

/**
 * The codes the spec itself names (section 7's table, 4.7, 4.12 and the task-level text), so the code table
 * can say which are cliphook's own. `invalid_subject_consent` is the spec's "invalid subject_consent" of 4.12.
 */
export const SPEC_CODES: ReadonlySet<ProblemCode> = new Set<ProblemCode>([
  'missing_input', 'invalid_duration', 'invalid_ratio', 'invalid_model', 'invalid_resolution', 'resolution_model_mismatch',
  'too_many_images', 'invalid_image_url', 'invalid_asset_id', 'invalid_callback_url', 'batch_too_large', 'invalid_json',
  'invalid_idempotency_key', 'not_failed', 'not_retryable', 'cannot_retry_a_retry', 'preset_not_found', 'field_required',
  'photos_required', 'character_no_photos', 'no_file', 'bad_mime', 'reference_media_unavailable', 'invalid_auth_header',
  'invalid_api_key', 'insufficient_credits', 'invalid_signature', 'not_found', 'idempotency_in_progress', 'already_rendering',
  'already_retried', 'retry_in_progress', 'media_not_ready', 'link_expired', 'too_large', 'body_too_large', 'consent_required',
  'photo_rejected', 'moderation_rejected', 'image_fetch_failed', 'idempotency_key_reused', 'prompt_blocked', 'document_blocked',
  'religious_text', 'minor_blocked', 'text_script_unsupported', 'cost_exceeds_max', 'rate_limit_exceeded', 'concurrency_limit',
  'rate_limited', 'region_unavailable', 'upstream_busy', 'no_session_available', 'moderation_pending', 'generation_paused',
  'task_create_failed', 'internal_error',
]);

/** Why cliphook answers a code the spec does not name: one documented code per kind of failure. */
const OURS: Partial<Record<ProblemCode, string>> = {
  invalid_parameter: 'a query or path value, a form field, or a body member of the wrong type or outside its bounds where the spec names no code (`parameter` names it)',
  invalid_subject_consent: 'spec 4.12 names the refusal ("invalid subject_consent") without a code',
  key_limit_reached: 'a sixth API key (spec 5.2 sets the limit without naming the refusal)',
  range_not_satisfiable: 'a `Range` outside a media file (RFC 9110)',
  method_not_allowed: 'a known path with another method, with `Allow`',
  unsupported_media_type: 'a JSON body sent without `Content-Type: application/json` (or a `+json` type): as `text/plain`, what `fetch` sends for a string, or with none; nothing is done',
};

const SUCCESS = (route: RouteSpec) => Object.keys(route.responses).join(', ');
const AUTH: Record<RouteSpec['auth'], string> = { key: 'key', settings: `key, open below ${LIMITS.minBalanceForKeys} credits`, admin: 'admin token', admin_or_key: 'admin token, or a key for its own account', none: 'none' };

/** The endpoint table of docs/service.md. */
export function endpointTable(): string {
  const rows = (ROUTES as readonly RouteSpec[]).map((route) => {
    const codes = route.problems.map((code) => `\`${code}\``).join(', ');
    const notes = [route.idempotent ? '`Idempotency-Key`' : '', route.summary].filter(Boolean).join('; ');
    return `| \`${route.method} ${route.path}\` | \`${route.operationId}\` | ${route.spec ?? ''} | ${AUTH[route.auth]} | ${SUCCESS(route)} | ${notes} | ${codes || '—'} |`;
  });
  return ['| method and path | operationId | spec | auth | success | what it does | its own problem codes |', '|---|---|---|---|---|---|---|', ...rows].join('\n');
}

/** The table of every problem code the API answers: status, whether a retry can succeed, and whose it is. */
export function codeTable(): string {
  const routesOf = new Map<ProblemCode, string[]>();
  for (const route of ROUTES as readonly RouteSpec[]) {
    for (const code of [...route.problems, ...commonProblems(route)]) routesOf.set(code, [...(routesOf.get(code) ?? []), route.operationId]);
  }
  routesOf.set('not_found', [...new Set([...(routesOf.get('not_found') ?? []), 'any unknown path'])]);
  routesOf.set('method_not_allowed', ['any known path with another method']);
  const codes = [...routesOf.keys()].sort((a, b) => PROBLEM_CODES[a].status - PROBLEM_CODES[b].status || a.localeCompare(b));
  const rows = codes.map((code) => {
    const { status, retryable } = PROBLEM_CODES[code];
    const whose = SPEC_CODES.has(code) ? 'spec' : `cliphook: ${OURS[code] ?? ''}`;
    const routes = routesOf.get(code)!;
    const where = routes.length > 8 ? `${routes.length} operations` : routes.map((id) => `\`${id}\``).join(', ');
    return `| ${status} | \`${code}\` | ${retryable ? 'yes' : 'no'} | ${whose} | ${where} |`;
  });
  return ['| status | code | retryable | named by | answered by |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** A duration in the largest whole unit: `24 hours`, `10 minutes`, `45 s`. */
function span(ms: number): string {
  const units: [number, string][] = [[86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute']];
  // A day is said in hours, as the spec does ("24 hours"); a week in days.
  for (const [size, name] of units) if (ms >= size * (name === 'day' ? 2 : 1) && ms % size === 0) return `${ms / size} ${name}${ms === size ? '' : 's'}`;
  return `${ms / 1000} s`;
}

/** `per minute`, `per 10 minutes`. */
const per = (ms: number) => `per ${span(ms).replace(/^1 /, '')}`;

const page = ({ min, max, default: fallback }: { min: number; max: number; default: number }) => `${min}-${max} (default ${fallback})`;

/** The limits table of docs/service.md, made from LIMITS, so the docs restate no number. */
export function limitsTable(): string {
  const { clipSeconds: clip, assistant } = LIMITS;
  const types = ASSET_MIME_TYPES.map((type) => type.slice('image/'.length).replace('jpeg', 'jpg')).join(', ');
  const rows: [string, string, string][] = [
    ['Requests per API key', `${LIMITS.requestsPerWindow} ${per(LIMITS.rateWindowMs)}; \`429 rate_limit_exceeded\` with \`Retry-After\``, '8'],
    ['API keys per account', `${LIMITS.keysPerAccount} (a further one: \`409 key_limit_reached\`)`, '5.2, 8'],
    ['Balance for keys to work / to make one', `${LIMITS.minBalanceForKeys} credits / ${LIMITS.minBalanceToCreateKeys} credits (\`402 insufficient_credits\`)`, '5.2, 5.3, 8'],
    ['Clip duration', `standard models ${clip.min}-${clip.maxStandard} s; cinema models ${clip.min}-${clip.maxCinema} s; default ${clip.default}`, '4.1, 8'],
    ['Reference images per clip', `${LIMITS.clipImages}`, '8'],
    ['Photos per image request', `${LIMITS.imagePhotos}`, '8'],
    ['Batch size', `1-${LIMITS.batchItems} items`, '4.2, 8'],
    ['`callback_url` length (and each `image_urls` entry)', `${LIMITS.callbackUrlChars} characters`, '4.1, 8'],
    ['`Idempotency-Key`', `1-${LIMITS.idempotencyKeyChars} printable ASCII characters; replay window ${span(LIMITS.idempotencyWindowMs)}`, '7, 8'],
    ['Asset file', `${MAX_ASSET_SIZE_TEXT} (${LIMITS.assetBytes.toLocaleString('en-US')} bytes); ${types}`, '4.12, 8'],
    ['Asset moderation (realistic speed)', `${LIMITS.assetModerationMs.map((ms) => ms / 1000).join('-')} s`, '3.2, 8'],
    ['Signed link validity', span(LIMITS.signedLinkMs), '2.1, 8'],
    ['Image description / template text', `${LIMITS.imageDescriptionChars} / ${LIMITS.imageTextChars} characters`, '4.7, 8'],
    ['Page size', `images ${page(LIMITS.imagePage)}; videos ${page(LIMITS.videoPage)}; assets ${page(LIMITS.assetPage)}`, '8'],
    ['`GET /images/{id}` wait', `0-${LIMITS.imageWaitSeconds} s`, '4.10, 8'],
    ['Image jobs', `${LIMITS.concurrentImageJobs} at once per account (\`429 concurrency_limit\`); ${LIMITS.imageJobsPerWindow} ${per(LIMITS.imageJobWindowMs)} (\`429 rate_limited\`)`, '8'],
    ['Character photo trusted for', span(LIMITS.characterTrustMs), '2.7, 8'],
    ['Generation time-out (realistic speed)', `${span(LIMITS.generationTimeoutMs)}, then \`upstream_timeout\``, '2.9'],
    ['Assistant daily limit', `${assistant.dailyLimit} credits ${per(assistant.dailyWindowMs)} (${assistant.dailyLimitBeforeTopUp} before the first top-up)`, '5.7, 8'],
    ['Assistant clips running at once', `${assistant.concurrentClips}`, '5.7, 8'],
    ['Assistant repeat window / tool wait', `${span(assistant.repeatWindowMs)} / ${assistant.toolWaitSeconds} s`, '5.7'],
    ['JSON body (spec: not shown)', `${LIMITS.jsonBodyBytes / (1024 * 1024)} MiB, then \`413 body_too_large\``, '8'],
  ];
  return ['| limit | value | spec |', '|---|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

/** The price table of docs/service.md (spec 2.13), made from pricing.ts, so the docs restate no price. */
export function priceTable(): string {
  const lengths = [5, 10, 15, 30];
  const clips = VIDEO_MODELS.map((model) => {
    const spec = MODEL_SPECS[model];
    const prices = lengths.map((seconds) => (seconds >= spec.minDuration && seconds <= spec.maxDuration ? String(clipPrice(model, seconds)) : 'n/a'));
    return `| \`${model}\` | ${spec.resolution} | ${spec.minDuration}-${spec.maxDuration} s | ${spec.perSecond} | ${prices.join(' | ')} | ${assistantClipPrice(model, 5)} |`;
  });
  const images = (['standard', 'hd'] as const).map((quality) => `| image, ${quality} (about ${IMAGE_MEGAPIXELS[quality]} MP) | ${IMAGE_PRICES[quality][1]} | ${IMAGE_PRICES[quality][4]} |`);
  return [
    `| model | resolution | duration | base credits per second | ${lengths.map((seconds) => `${seconds} s`).join(' | ')} | assistant, 5 s |`,
    `|---|---|---|---|${lengths.map(() => '---|').join('')}---|`,
    ...clips,
    '',
    `Through \`/v1\`: ceil(base per second × seconds × ${1 - API_DISCOUNT}); assistants pay the base price. Images, in credits:`,
    '',
    '| job | 1 image | 4 variations |',
    '|---|---|---|',
    ...images,
    `| AI character (4 photos) | ${IMAGE_PRICES.character} | — |`,
  ].join('\n');
}

/** Replaces the text between `<!-- contract:<name> -->` and `<!-- /contract:<name> -->` in `doc`. */
export function withTable(doc: string, name: string, table: string): string {
  const open = `<!-- contract:${name} -->`;
  const close = `<!-- /contract:${name} -->`;
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start === -1 || end === -1 || end < start) throw new Error(`the document has no ${open} … ${close} section`);
  return `${doc.slice(0, start + open.length)}\n${table}\n${doc.slice(end)}`;
}

/** docs/service.md with its contract tables made afresh. */
export function withContractTables(doc: string): string {
  const tables = withTable(withTable(withTable(withTable(doc, 'endpoints', endpointTable()), 'codes', codeTable()), 'limits', limitsTable()), 'prices', priceTable());
  // The codes only the assistant's tools answer, and its effects catalogue.
  return withTable(withTable(tables, 'assistant-codes', assistantCodeTable()), 'effects', effectsTable());
}
