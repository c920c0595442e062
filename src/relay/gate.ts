import { HEADER_SIGNATURE } from '../protocol/headers.js';
import { problem, problemHeaders } from '../protocol/problem.js';
import { checkSignature } from '../protocol/signature.js';
import type { EventFrame, RawHeaders } from './frames.js';
import { targetPath } from './forward.js';
import type { ListenerRefusalCode } from './listener-types.js';
import { pathRefusal } from './path-guard.js';

/**
 * The listener's own checks on an event before it reaches the local app (whoever has the channel
 * URL must not be able to call any method or path of the local app and read its replies). The relay checks
 * paths at its ingress too; this is the second check, on the URL the listener itself builds.
 */

/** Why an event is answered by the listener: a problem the sender reads. */
export interface Refusal {
  code: ListenerRefusalCode;
  status: number;
  /** What the sender reads: fixed sentences, since whoever has the channel URL is anonymous. */
  detail: string;
  /** Why, for listen's own output only: it may name the local path (`it leaves /hooks`). */
  reason: string;
  /** Extra reply headers (`Allow` for a 405). */
  headers: RawHeaders;
}

export interface GateOptions {
  forwardTo: URL;
  methods: ReadonlySet<string>;
  secret: string | readonly string[] | undefined;
  forwardInvalid: boolean;
}

/** Why a signature does not verify, as the receiver answers it: its problem code. */
export type SignatureProblem = 'missing_signature' | 'malformed_signature' | 'invalid_signature';

/** The signature verdict, kept for the event line. */
export interface SignatureVerdict {
  /** `null` without a secret. */
  valid: boolean | null;
  /** Why it is not valid; `null` when it is, or without a secret. */
  problem: SignatureProblem | null;
  /**
   * The secret it verified under, the only one it may be re-signed with: re-signing with another would
   * turn an event forged with an old, leaked secret into one signed with the new secret.
   */
  secret: string | null;
}

/**
 * Checks `X-Service-Signature` the way the receiver does (`verify-core.ts`), so the sender reads the same
 * code from listen as from the app: none or empty is missing, two headers (which Node joins with ", ") or a
 * value not of the form `sha256=<64 hex>` is malformed, and a well-formed one matching no secret is invalid.
 */
export function signatureOf(frame: Pick<EventFrame, 'body' | 'headers'>, secret: string | readonly string[] | undefined): SignatureVerdict {
  if (secret === undefined) return { valid: null, problem: null, secret: null };
  // Not `rawHeader`: it reads the first value only, and a repeated header must not pass as that one.
  const values = signatureValues(frame.headers);
  const [value] = values;
  if (value === undefined || (values.length === 1 && value === '')) return { valid: false, problem: 'missing_signature', secret: null };
  if (values.length > 1) return { valid: false, problem: 'malformed_signature', secret: null };
  const secrets = typeof secret === 'string' ? [secret] : secret;
  let matched: string | null = null;
  let malformed = false;
  // Every secret is checked, with no early exit, as `checkSignature` does: the time taken does not tell which matched.
  for (const one of secrets) {
    const check = checkSignature(frame.body, value, one);
    if (check === 'malformed') malformed = true;
    else if (check === 'valid' && matched === null) matched = one;
  }
  if (malformed) return { valid: false, problem: 'malformed_signature', secret: null };
  return matched === null ? { valid: false, problem: 'invalid_signature', secret: null } : { valid: true, problem: null, secret: matched };
}

/** Every value of `X-Service-Signature`, in order. */
function signatureValues(headers: RawHeaders): string[] {
  const values: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (headers[i]!.toLowerCase() === HEADER_SIGNATURE) values.push(headers[i + 1]!);
  return values;
}

/** What the sender reads for each signature problem: the receiver's own statuses and words. */
const SIGNATURE_REFUSALS: Record<SignatureProblem, { status: number; detail: string }> = {
  missing_signature: { status: 401, detail: 'The X-Service-Signature header is missing.' },
  malformed_signature: { status: 400, detail: 'X-Service-Signature must be one value of the form sha256=<64 hex digits>.' },
  invalid_signature: { status: 401, detail: 'X-Service-Signature does not match the body under the secret listen was given.' },
};

/** The refusal for `frame`, or `null` when it may go to the local app. Method, then path, then signature. */
export function refusalFor(frame: EventFrame, signature: SignatureVerdict, options: GateOptions): Refusal | null {
  if (!options.methods.has(frame.method)) {
    const allow = [...options.methods].join(', ');
    const detail = `listen forwards only ${allow} (listen --methods).`;
    return { code: 'method_not_allowed', status: 405, detail, reason: detail, headers: ['Allow', allow] };
  }
  const path = unsafePath(options.forwardTo, frame);
  if (path !== null) return { code: 'invalid_path', status: 400, detail: 'The path is not forwarded.', reason: `The path is not forwarded: ${path}.`, headers: [] };
  if (signature.problem !== null && !options.forwardInvalid) {
    const { status, detail } = SIGNATURE_REFUSALS[signature.problem];
    return { code: signature.problem, status, detail, reason: detail, headers: [] };
  }
  return null;
}

/**
 * Why the extra path of `frame` could leave `forwardTo`'s path once the local app or a proxy normalises
 * it, or `null` when it cannot. The relay's own ingress rule (`pathRefusal`) comes first, in full: the
 * listener cannot tell which relay it talks to, so its check must not be weaker than the ingress's.
 */
export function unsafePath(forwardTo: URL, frame: Pick<EventFrame, 'path' | 'query'>): string | null {
  const { path } = frame;
  if (path === '') return null;
  const refused = pathRefusal(path);
  if (refused !== null) return refused;
  // Belt and braces: the URL the listener builds, read the way WHATWG URL parsers read it, stays under the prefix.
  const prefix = forwardTo.pathname.replace(/\/+$/, '');
  // Concatenated, not resolved against the origin: `//host/x` is a path here, never another host.
  const parsed = new URL(forwardTo.origin + targetPath(forwardTo, frame)).pathname;
  if (parsed !== prefix && !parsed.startsWith(`${prefix}/`)) return `it leaves ${prefix || '/'}`;
  return null;
}

/** The reply the sender reads for a refusal: an RFC 9457 problem with the code. */
export function refusalReply(refusal: Refusal): { status: number; headers: RawHeaders; body: Buffer } {
  const body = problem(refusal.code, { status: refusal.status, detail: refusal.detail });
  const headers: RawHeaders = [];
  for (const [name, value] of Object.entries(problemHeaders(body))) headers.push(name, value);
  return { status: refusal.status, headers: [...headers, ...refusal.headers], body: Buffer.from(JSON.stringify(body)) };
}
