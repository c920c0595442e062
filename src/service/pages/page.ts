import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { packageRoot } from '../../version.js';
import { fail, type Result } from '../http/result.js';

/**
 * The service's few HTML pages (the photo upload page, the assistant's authorization page): one document
 * shell, one set of security headers, and one route for their CSS and scripts. No framework: the markup is
 * built with the `html` tag, which escapes every value it interpolates.
 */

/** Where the pages' files are served: outside `/v1` and `/files`, so no path of the spec can collide. */
export const PAGE_FILES_PATH = '/assets-ui';

/**
 * The pages' Content-Security-Policy: their own CSS and ES modules only (no inline script or style), photo
 * previews from `blob:`, forms that post back to the service, and no framing.
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Headers every page (and page file) carries: nothing cached, no Referer (a page's URL holds its token), no framing. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': PAGE_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
});

/** Markup that is already safe: made by `html`, or by `unsafeRaw` for a constant. Anything else is escaped. */
export class SafeHtml {
  readonly value: string;
  /** @internal Use `html` or `unsafeRaw`. */
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

/**
 * Escapes text for HTML content and quoted attribute values (`& < > " '`).
 * @example escapeHtml('<b>"x"</b>') // '&lt;b&gt;&quot;x&quot;&lt;/b&gt;'
 */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * A template tag for markup: every interpolated value is escaped, except `SafeHtml` (another `html`
 * fragment) and arrays of them, which are joined. `null`, `undefined` and `false` render as nothing.
 * @example html`<p>Hello ${name}</p>${items.map((item) => html`<li>${item}</li>`)}`
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += fragment(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Marks a constant string of markup as safe. Never pass it anything a request or a record supplied. */
export function unsafeRaw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function fragment(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(fragment).join('');
  return escapeHtml(value);
}

/** What `renderPage` takes. */
export interface PageOptions {
  /** The document's `<title>` and the page's `<h1>`. */
  title: string;
  /** The content of `<main>`, under the heading: an `html` fragment. */
  main: SafeHtml;
  /** ES modules of `templates/service/` to load, by file name. @default [] @example ['photo-upload.js'] */
  scripts?: readonly string[];
  /** @default 'en' */
  lang?: string;
}

/**
 * A whole HTML document: the shared stylesheet (`page.css`, light and dark), the title as `<h1>`, `main`
 * as the page's one landmark, and its scripts as deferred ES modules. Every value is escaped.
 * @example
 * const page = renderPage({ title: 'Upload a photo', main: html`<p>Pick a photo.</p>`, scripts: ['photo-upload.js'] });
 */
export function renderPage({ title, main, scripts = [], lang = 'en' }: PageOptions): string {
  for (const name of scripts) if (!isPageFileName(name)) throw new TypeError(`Expected \`scripts\` to name files of templates/service/, got ${JSON.stringify(name)}.`);
  return html`<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${title} · cliphook</title>
<link rel="stylesheet" href="${PAGE_FILES_PATH}/page.css">
${scripts.map((name) => html`<script type="module" src="${PAGE_FILES_PATH}/${name}"></script>\n`)}</head>
<body>
<main id="main">
<h1>${title}</h1>
${main}
</main>
</body>
</html>
`.value;
}

/**
 * Sends a rendered page with `PAGE_HEADERS` (CSP, `no-store`, `no-referrer`, `DENY`), and answers
 * `undefined`, as a Router handler that wrote its own response does (the Router takes `undefined` from an
 * async handler only).
 * @example router.add('GET', '/photos/upload/:token', async (_, res) => sendPage(res, 200, renderPage({ title, main })));
 */
export function sendPage(res: ServerResponse, status: number, document: string, headers: Record<string, string> = {}): undefined {
  res.writeHead(status, { ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(document)), ...headers });
  res.end(document);
  return undefined;
}

/**
 * Whether a browser asked for a page rather than JSON: `Accept` names `text/html` (a navigation, a form
 * post). Scripts (`fetch` with `Accept: application/json`) and API clients get problem+json instead.
 */
export function wantsHtml(req: IncomingMessage): boolean {
  return /\btext\/html\b/.test(req.headers.accept ?? '');
}

/**
 * Whether a state-changing request comes from the service's own pages: `Origin` equal to `origin`, or,
 * without an `Origin`, `Sec-Fetch-Site: same-origin`. A request with neither is refused: browsers send
 * `Origin` on every POST, so only a non-browser client omits both, and it has no business posting a page's form.
 * @example if (!isSameOrigin(req, service.origin)) return fail('origin_not_allowed');
 */
export function isSameOrigin(req: IncomingMessage, origin: string): boolean {
  const sent = req.headers.origin;
  // A page sent with `Referrer-Policy: no-referrer` posts its forms with `Origin: null`: then the
  // browser's own `Sec-Fetch-Site` (which no page can set) decides.
  if (sent !== undefined && sent !== 'null') return sent === new URL(origin).origin;
  return req.headers['sec-fetch-site'] === 'same-origin';
}

/**
 * `PAGE_CSP` with one more place a form may end up: browsers apply `form-action` to every redirect after
 * the post, so a page whose form ends at another site (the authorization page, at the assistant's
 * redirect URI) names it. `target` is a URL the caller has already validated; its origin (or, for a
 * native app's own scheme, the scheme) is added.
 */
export function cspWithFormTarget(target: string): string {
  const url = URL.parse(target);
  if (!url) return PAGE_CSP;
  const source = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) ? url.protocol : null;
  return source ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${source}`) : PAGE_CSP;
}

/** The largest urlencoded form the pages read. */
export const MAX_FORM_BYTES = 16 * 1024;

/**
 * Reads a page's `application/x-www-form-urlencoded` post, at most `limit` bytes (checked against the
 * declared length before reading). Resolves `null` when it is too large or cannot be read: the caller
 * answers with its page, and the rest of the body is drained.
 */
export async function readForm(req: IncomingMessage, limit = MAX_FORM_BYTES): Promise<{ form: URLSearchParams } | { error: 'too_large' | 'unreadable' }> {
  try {
    const read = readBody(req, limit, Number(req.headers['content-length'] ?? Number.NaN));
    return { form: new URLSearchParams((Buffer.isBuffer(read) ? read : await read).toString('utf8')) };
  } catch (error) {
    req.resume();
    return { error: error instanceof BodyReadError && error.reason === 'too_large' ? 'too_large' : 'unreadable' };
  }
}

const TYPES: Record<string, string> = { '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };
const FILE_NAME = /^[a-z0-9][a-z0-9-]*\.(?:css|js)$/;

/** Whether `name` could be a page file: lowercase letters, digits and dashes, then `.css` or `.js`. */
function isPageFileName(name: string): boolean {
  return FILE_NAME.test(name);
}

let files: ReadonlyMap<string, { bytes: Buffer; type: string }> | null = null;

/**
 * The pages' files, read once from `templates/service/` (shipped with the package, as `files` lists
 * `templates`): only the `.css` and `.js` files found there are served, by exact name, so a path
 * like `..%2Fsrc%2Fx.js` matches nothing.
 */
function pageFiles(): ReadonlyMap<string, { bytes: Buffer; type: string }> {
  if (files) return files;
  const dir = new URL('templates/service/', packageRoot);
  const found = new Map<string, { bytes: Buffer; type: string }>();
  for (const name of readdirSync(dir)) {
    if (isPageFileName(name)) found.set(name, { bytes: readFileSync(new URL(name, dir)), type: TYPES[name.slice(name.lastIndexOf('.'))]! });
  }
  files = found;
  return found;
}

/**
 * Sends `templates/service/<name>` with `PAGE_HEADERS`, or answers 404 not_found for any other name.
 * @example sendPageFile(res, 'page.css')
 */
export function sendPageFile(res: ServerResponse, name: string): Result | undefined {
  const file = isPageFileName(name) ? pageFiles().get(name) : undefined;
  if (!file) return fail('not_found', { detail: `No page file ${name}.` });
  // Revalidated each time rather than kept: a new version of the service must not run yesterday's script.
  res.writeHead(200, { ...PAGE_HEADERS, 'cache-control': 'no-cache', 'content-type': file.type, 'content-length': String(file.bytes.length) });
  res.end(file.bytes);
  return undefined;
}

/**
 * The Router handler of `GET ${PAGE_FILES_PATH}/:file`.
 * @example router.add('GET', `${PAGE_FILES_PATH}/:file`, pageFileRoute);
 */
export async function pageFileRoute({ params }: { params: Record<string, string> }, res: ServerResponse): Promise<Result | undefined> {
  return sendPageFile(res, params.file ?? '');
}
