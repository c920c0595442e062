import { HEADER_SIGNATURE } from '../protocol/headers.js';
import { problem, problemHeaders } from '../protocol/problem.js';
import { checkSignature } from '../protocol/signature.js';
import type { EventFrame, RawHeaders } from './frames.js';
import { targetPath } from './forward.js';
import type { ListenerRefusalCode } from './listener-types.js';
import { pathRefusal } from './path-guard.js';

/**
 * The listener's own checks on an event before it reaches the local app (issue 10: whoever has the channel
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

/** The signature verdict, kept for the event line: `null` without a secret. */
export function signatureOf(frame: EventFrame, secret: string | readonly string[] | undefined): { valid: boolean | null; missing: boolean } {
  if (secret === undefined) return { valid: null, missing: false };
  const values = signatureValues(frame.headers);
  // Two headers reach a Node receiver joined with ", ", which never verifies: the same verdict here.
  if (values.length !== 1) return { valid: false, missing: values.length === 0 || values[0] === '' };
  return { valid: checkSignature(frame.body, values[0], secret) === 'valid', missing: values[0] === '' };
}

/** Every value of `X-Service-Signature`, in order. */
export function signatureValues(headers: RawHeaders): string[] {
  const values: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (headers[i]!.toLowerCase() === HEADER_SIGNATURE) values.push(headers[i + 1]!);
  return values;
}

/** The refusal for `frame`, or `null` when it may go to the local app. Method, then path, then signature. */
export function refusalFor(frame: EventFrame, signature: { valid: boolean | null; missing: boolean }, options: GateOptions): Refusal | null {
  if (!options.methods.has(frame.method)) {
    const allow = [...options.methods].join(', ');
    const detail = `listen forwards only ${allow} (listen --methods).`;
    return { code: 'method_not_allowed', status: 405, detail, reason: detail, headers: ['Allow', allow] };
  }
  const path = unsafePath(options.forwardTo, frame);
  if (path !== null) return { code: 'invalid_path', status: 400, detail: 'The path is not forwarded.', reason: `The path is not forwarded: ${path}.`, headers: [] };
  if (signature.valid === false && !options.forwardInvalid) {
    return signature.missing
      ? { code: 'missing_signature', status: 401, detail: 'The X-Service-Signature header is missing.', reason: 'The X-Service-Signature header is missing.', headers: [] }
      : { code: 'invalid_signature', status: 401, detail: 'X-Service-Signature does not match the body under the secret listen was given.', reason: 'X-Service-Signature does not match the body under the secret listen was given.', headers: [] };
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
