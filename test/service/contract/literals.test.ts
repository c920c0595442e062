import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { VIDEO_ERROR_CODES } from '../../../src/protocol/events.js';
import { ASSET_MIME_TYPES, ASSET_STATUSES, REASON_CODES, TRUST_LEVELS } from '../../../src/service/contract/assets.js';
import { SUBJECT_CONSENTS, USER_ACTIONS } from '../../../src/service/contract/common.js';
import { ANIMATE_VALUES, CHARACTER_AGES, CHARACTER_STYLES, IMAGE_ERROR_CODES, IMAGE_JOB_STATUSES, IMAGE_RATIOS } from '../../../src/service/contract/images.js';
import { VIDEO_MODELS } from '../../../src/service/contract/pricing.js';
import { TEMPLATE_NAMES } from '../../../src/service/contract/templates.js';
import { ASSET_SOURCES, MODEL_ALIASES, RATIOS, RESOLUTIONS, VIDEO_STATUSES } from '../../../src/service/contract/videos.js';

// Issue 31 item 3: the spec's prices, limits, enums, model ids and version live in src/service/contract/
// only. This scans the rest of src/service for copies of them, by the TypeScript syntax tree (so comments
// and unrelated numbers are not read): a distinctive number anywhere, a common one only where the names
// around it say it is that limit, a model id, three or more values of one spec enum in one list or union.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Spec enums: three of one in a list or a union outside contract/ is a copy. */
const ENUMS: Record<string, readonly string[]> = {
  'video status': VIDEO_STATUSES,
  'asset status': ASSET_STATUSES,
  'image job status': IMAGE_JOB_STATUSES,
  'image error_code': IMAGE_ERROR_CODES,
  'video error_code': VIDEO_ERROR_CODES,
  subject_consent: SUBJECT_CONSENTS,
  'user_action kind': USER_ACTIONS,
  ratio: RATIOS,
  'image ratio': IMAGE_RATIOS,
  resolution: RESOLUTIONS,
  model: VIDEO_MODELS,
  asset_source: ASSET_SOURCES,
  animate: ANIMATE_VALUES,
  'asset type': ASSET_MIME_TYPES,
  trust_level: TRUST_LEVELS,
  reason_code: REASON_CODES,
  'character age': CHARACTER_AGES,
  'character style': CHARACTER_STYLES,
  template: TEMPLATE_NAMES,
};

/** Model ids as string literals ('standard' alone is also an image quality, so it is left to the enum rule). */
const MODEL_IDS = new Set<string>([...VIDEO_MODELS.filter((id) => id !== 'standard'), ...Object.keys(MODEL_ALIASES)]);

const DAY = 24 * 60 * 60 * 1000;
/** A number (a literal, or a product of literals such as `24 * 60 * 60 * 1000`), and the names around it that make it the spec's. */
const NUMBERS: { value: number; near?: RegExp; what: string }[] = [
  { value: 2048, what: 'callback_url length (LIMITS.callbackUrlChars)' },
  { value: 240, what: 'balance to unlock keys (LIMITS.minBalanceToCreateKeys)' },
  { value: 20 * 1024 * 1024, what: 'asset size (LIMITS.assetBytes)' },
  { value: 1024 * 1024, near: /body|max|limit/i, what: 'JSON body size (LIMITS.jsonBodyBytes)' },
  { value: 255, near: /idempot/i, what: 'Idempotency-Key length (LIMITS.idempotencyKeyChars)' },
  { value: 60, near: /rate|requests?\b/i, what: 'requests per minute (LIMITS.requestsPerWindow)' },
  { value: 60_000, near: /rate/i, what: 'rate window (LIMITS.rateWindowMs)' },
  { value: 5, near: /keys?_?per|per_?account|max_?keys|batch|clip_?images|reference/i, what: 'keys, batch items or clip images (LIMITS)' },
  { value: 10, near: /balance|top_?up|floor/i, what: 'minimum balance or daily limit before top-up (LIMITS)' },
  { value: 3, near: /concurren|photos|images_?per/i, what: 'concurrent jobs or photos per request (LIMITS)' },
  { value: 30, near: /jobs?_?per|image|daily|wait/i, what: 'image jobs per window, daily limit or image wait (LIMITS)' },
  { value: 45, near: /wait/i, what: "a tool's wait (LIMITS.assistant.toolWaitSeconds)" },
  { value: 4, near: /duration/i, what: 'clip duration (LIMITS.clipSeconds)' },
  { value: 15, near: /duration/i, what: 'clip duration (LIMITS.clipSeconds)' },
  { value: 5_000, near: /moderation/i, what: 'asset moderation time (LIMITS.assetModerationMs)' },
  { value: 60_000, near: /moderation/i, what: 'asset moderation time (LIMITS.assetModerationMs)' },
  { value: 40_000, near: /moderation/i, what: 'photo moderation wait (LIMITS.photoModerationWaitMs)' },
  { value: 1000, near: /description/i, what: 'image description length (LIMITS.imageDescriptionChars)' },
  { value: 60, near: /text/i, what: 'image text length (LIMITS.imageTextChars)' },
  { value: DAY, near: /idempot|replay|daily|day_?ms/i, what: 'a 24-hour window (LIMITS.idempotencyWindowMs)' },
  { value: DAY / 1000, near: /idempot|replay|daily|day_?ms/i, what: 'a 24-hour window (LIMITS.idempotencyWindowMs)' },
  { value: 7 * DAY, near: /link|media|sign/i, what: 'signed link validity (LIMITS.signedLinkMs)' },
  { value: 30 * DAY, near: /trust|character/i, what: 'trusted photo validity (LIMITS.characterTrustMs)' },
  { value: 10 * 60 * 1000, near: /window|timeout|job/i, what: 'a 10-minute window or time-out (LIMITS)' },
  { value: 2 * 60 * 1000, near: /repeat/i, what: "the assistant's repeat window (LIMITS.assistant.repeatWindowMs)" },
];

/** Spec words inside a string, a template or a regular expression. */
const WORDS: { pattern: RegExp; what: string }[] = [
  { pattern: /\b1\.1\.0\b/, what: 'the interface version (API_VERSION)' },
  { pattern: /\b20 ?MB\b/, what: 'asset size (LIMITS.assetBytes)' },
  { pattern: /\{1,255\}|\b1-255\b/, what: 'Idempotency-Key length (LIMITS.idempotencyKeyChars)' },
  { pattern: /\b2048\b/, what: 'callback_url length (LIMITS.callbackUrlChars)' },
  { pattern: /\b240\b/, what: 'balance to unlock keys (LIMITS.minBalanceToCreateKeys)' },
  { pattern: /\b\d+ (days|hours|minutes)\b/, what: 'a spec window or validity: the replay window, the daily window, signed links, trusted photos (LIMITS)' },
  { pattern: /\b\d+ credits?\b/, what: 'a price or a credit limit (pricing.ts, LIMITS)' },
  { pattern: /\bat most \d+ (image jobs|keys|clips|items|photos|reference images)\b/i, what: 'a spec limit (LIMITS)' },
  { pattern: /\b\d+ (image jobs|requests) per\b/, what: 'a spec rate (LIMITS)' },
  { pattern: /\bup to \d+ ?(s|seconds|MB|characters)\b/i, what: 'a spec limit (LIMITS)' },
];

export interface Stray {
  file: string;
  line: number;
  /** `<kind>: <source text>`, what a pending entry names. */
  found: string;
  why: string;
}

const clip = (text: string) => {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > 80 ? `${flat.slice(0, 77)}...` : flat;
};

/** The names a literal stands under (its declaration, property, parameter, assignment) and the text of a template it is in. */
function contextOf(node: ts.Node): string {
  const names: string[] = [];
  for (let at = node.parent; at && !ts.isSourceFile(at) && !ts.isBlock(at); at = at.parent) {
    if ((ts.isVariableDeclaration(at) || ts.isPropertyAssignment(at) || ts.isPropertyDeclaration(at) || ts.isParameter(at) || ts.isBindingElement(at)) && at.name) names.push(at.name.getText());
    else if (ts.isTemplateExpression(at)) names.push(at.getText());
    else if (ts.isBinaryExpression(at) && at.operatorToken.kind === ts.SyntaxKind.EqualsToken) names.push(at.left.getText());
  }
  return names.join(' ');
}

/** The value of `a * b * …` made only of numeric literals, else `undefined`. */
function product(node: ts.Node): number | undefined {
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (ts.isParenthesizedExpression(node)) return product(node.expression);
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.AsteriskToken) {
    const left = product(node.left);
    const right = product(node.right);
    return left === undefined || right === undefined ? undefined : left * right;
  }
  return undefined;
}

const isProductPart = (node: ts.Node): boolean =>
  (ts.isBinaryExpression(node.parent) && node.parent.operatorToken.kind === ts.SyntaxKind.AsteriskToken && product(node.parent) !== undefined) ||
  (ts.isParenthesizedExpression(node.parent) && isProductPart(node.parent));

/** The string values a list holds: its string elements, and the string members of its object elements (`{ value: 'self', … }`). */
function stringsOf(list: ts.ArrayLiteralExpression): string[] {
  const out: string[] = [];
  for (const element of list.elements) {
    if (ts.isStringLiteralLike(element)) out.push(element.text);
    else if (ts.isObjectLiteralExpression(element)) {
      for (const member of element.properties) if (ts.isPropertyAssignment(member) && ts.isStringLiteralLike(member.initializer)) out.push(member.initializer.text);
    }
  }
  return out;
}

function enumIn(values: readonly string[]): string | undefined {
  const set = new Set(values);
  return Object.entries(ENUMS).find(([, members]) => members.filter((member) => set.has(member)).length >= 3)?.[0];
}

/** Every copy of a spec literal in one file's source. */
export function findStrays(file: string, source: string): Stray[] {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const strays: Stray[] = [];
  const add = (node: ts.Node, kind: string, why: string) =>
    strays.push({ file, line: tree.getLineAndCharacterOfPosition(node.getStart()).line + 1, found: `${kind}: ${clip(node.getText())}`, why });
  const visit = (node: ts.Node): void => {
    const value = ts.isNumericLiteral(node) || ts.isBinaryExpression(node) ? product(node) : undefined;
    if (value !== undefined && !isProductPart(node)) {
      const context = contextOf(node);
      const hit = NUMBERS.find((rule) => rule.value === value && (!rule.near || rule.near.test(context)));
      if (hit) add(node, 'number', hit.what);
      return;
    }
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node) || ts.isRegularExpressionLiteral(node)) {
      const text = ts.isRegularExpressionLiteral(node) ? node.text : node.text;
      if (ts.isStringLiteral(node) && MODEL_IDS.has(text)) add(node, 'model', 'a model id (VIDEO_MODELS, MODEL_SPECS)');
      const word = WORDS.find((rule) => rule.pattern.test(text));
      if (word) add(node, 'text', word.what);
    }
    if (ts.isArrayLiteralExpression(node)) {
      const name = enumIn(stringsOf(node));
      if (name) add(node, 'list', `the ${name} values (an enum of contract/)`);
    }
    if (ts.isUnionTypeNode(node)) {
      const literals = node.types.flatMap((type) => (ts.isLiteralTypeNode(type) && ts.isStringLiteral(type.literal) ? [type.literal.text] : []));
      const name = enumIn(literals);
      if (name) add(node, 'union', `the ${name} values (an enum of contract/)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return strays;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    // Issue 31 item 5: the test helpers' part of the contract lives with them, in testing/contract/.
    if (entry.isDirectory()) return path.endsWith(join('service', 'contract')) || path.endsWith(join('service', 'testing', 'contract')) ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Copies still in files the runner engineer is rewriting (src/service/http/, src/service/assistant/,
 * src/service/testing/): each is to become an import of contract/ (LIMITS, API_VERSION, VIDEO_MODELS,
 * the prices of pricing.ts, the enums). Issue 31 item 3: this list is emptied when those rewrites merge;
 * an entry that no longer matches a copy fails, so the list only shrinks. Each is [file, text of the copy].
 */
const PENDING: readonly (readonly [file: string, has: string])[] = [
  // /v1's body limit, the asset size in words (MAX_ASSET_SIZE_TEXT) and the Idempotency-Key rule (IDEMPOTENCY_KEY_RULE).
  ['src/service/http/multipart.ts', 'bytes (20 MB)'],
  // Test controls: a fault's Retry-After for rate_limit_exceeded and its balance floor (LIMITS), the path filter's length, an image status union.
  ['src/service/testing/fault-answer.ts', 'number: 60'],
  ['src/service/testing/fault-answer.ts', 'number: 10'],
  ['src/service/testing/seed.ts', "'generating' | 'done' | 'partial' | 'failed'"],
];

const isPending = (stray: Stray, [file, has]: readonly [string, string]) => stray.file === file && stray.found.includes(has);

describe('the spec literals live in src/service/contract/ only (issue 31 item 3)', () => {
  it('finds none outside contract/ but the listed pending ones, and every pending one is still there', () => {
    const strays = sources(join(ROOT, 'src/service')).flatMap((path) => findStrays(relative(ROOT, path).replaceAll('\\', '/'), readFileSync(path, 'utf8')));
    const unexpected = strays.filter((stray) => !PENDING.some((entry) => isPending(stray, entry))).map((stray) => `${stray.file}:${stray.line} ${stray.found} — ${stray.why}`);
    expect(unexpected, 'import these from src/service/contract/ instead').toEqual([]);
    const gone = PENDING.filter((entry) => !strays.some((stray) => isPending(stray, entry)));
    expect(gone, 'no longer found: remove from PENDING').toEqual([]);
  });

  it('flags each kind of copy, and leaves names, unrelated numbers and comments alone', () => {
    const sample = [
      "export const MAX_KEYS_PER_ACCOUNT = 5;",
      "export const RATE_WINDOW_MS = 60 * 1000;",
      "const WINDOW = 24 * 60 * 60 * 1000; const idempotencyWindowMs = WINDOW;",
      "const idempotencyWindow = 24 * 60 * 60 * 1000;",
      "const server = { version: '1.1.0' };",
      "type Status = 'pending' | 'generating' | 'done';",
      "const order = ['permission', 'self', 'no_real_person'] as const;",
      "const CHOICES = [{ value: 'self' }, { value: 'permission' }, { value: 'no_real_person' }];",
      "const effect = { model: 'cinema-hd' };",
      "const sentence = `At most 3 image jobs run at once`;",
      "const pattern = /^[\\x21-\\x7e]{1,255}$/;",
      "const limit = 2048;",
      "const gone = 'Signed links last 7 days.';",
      // Not copies: a code thrown by name, a comment, unrelated numbers, one enum value.
      "throw new ServiceError('not_found', `No video ${id}.`); // at most 5 keys, 2048 characters",
      "const PROGRESS_STEPS = 10; const minutes = ttl / 60_000; const width = 5; const status = 'done';",
    ].join('\n');
    const found = findStrays('sample.ts', sample).map((stray) => `${stray.line} ${stray.found}`);
    expect(found).toEqual([
      '1 number: 5',
      '2 number: 60 * 1000',
      '4 number: 24 * 60 * 60 * 1000',
      "5 text: '1.1.0'",
      "6 union: 'pending' | 'generating' | 'done'",
      "7 list: ['permission', 'self', 'no_real_person']",
      "8 list: [{ value: 'self' }, { value: 'permission' }, { value: 'no_real_person' }]",
      "9 model: 'cinema-hd'",
      '10 text: `At most 3 image jobs run at once`',
      '11 text: /^[\\x21-\\x7e]{1,255}$/',
      '12 number: 2048',
      "13 text: 'Signed links last 7 days.'",
    ]);
  });
});
