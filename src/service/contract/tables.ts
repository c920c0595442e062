import { PROBLEM_CODES, type ProblemCode } from '../../protocol/problem.js';
import { commonProblems, ROUTES, type RouteSpec } from './routes.js';

// The docs' tables of the service, made from the contract: docs/service.md holds them between markers,
// `npm run docs` writes them, and a test fails when they are stale (issue 21).

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
const AUTH: Record<RouteSpec['auth'], string> = { key: 'key', settings: 'key, open below 10 credits', admin: 'admin token', admin_or_key: 'admin token, or a key for its own account', none: 'none' };

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

/** Replaces the text between `<!-- contract:<name> -->` and `<!-- /contract:<name> -->` in `doc`. */
export function withTable(doc: string, name: string, table: string): string {
  const open = `<!-- contract:${name} -->`;
  const close = `<!-- /contract:${name} -->`;
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start === -1 || end === -1 || end < start) throw new Error(`the document has no ${open} … ${close} section`);
  return `${doc.slice(0, start + open.length)}\n${table}\n${doc.slice(end)}`;
}

/** docs/service.md with both tables made afresh. */
export function withContractTables(doc: string): string {
  return withTable(withTable(doc, 'endpoints', endpointTable()), 'codes', codeTable());
}
