import { z } from 'zod';
import type { ProblemCode } from '../../protocol/problem.js';
import { ServiceError, type Refusal } from './service-error.js';

export { ServiceError, type Refusal } from './service-error.js';

/**
 * The one place a validation failure becomes a problem of spec section 7. Every schema of the contract
 * that can fail carries a `Rule` (kept beside the schema, so nothing of it leaks into the JSON Schema):
 * the spec `code` it fails with, the values a refusal lists, and its sentence. `refusalOf` walks a failed
 * issue's path down the schema and answers the deepest rule it meets; a cross-field rule (`superRefine`)
 * puts its code in the issue's `params` instead. `/v1`, `/mcp` and the test helpers share this mapper.
 */

/** The zod issue kinds a rule can answer with another code (an array past its max: `too_many_images`). */
type IssueKind = 'invalid_type' | 'invalid_value' | 'too_big' | 'too_small' | 'invalid_format' | 'custom';

export interface Rule {
  /** The code any failure of this schema answers. */
  code: ProblemCode;
  /** Codes that differ by the kind of failure: `{ too_big: 'too_many_images' }`. */
  when?: Partial<Record<IssueKind, ProblemCode>>;
  /** The allowed values a refusal lists (spec 7: "body lists allowed values"); a function reads the whole input. */
  allowed?: readonly unknown[] | ((root: unknown) => readonly unknown[]);
  /** The refusal's sentence; by default one is made from the field's name and what was wrong. */
  detail?: (failure: Failure) => string;
  /** Extra members of the problem (`parameter`, …). */
  extra?: Record<string, unknown>;
}

/** What a rule's `detail` is told about the failure. */
export interface Failure {
  /** Where, as the request spells it: `duration`, `items[2].image_urls[0]`. */
  where: string;
  issue: z.core.$ZodIssue;
  /** The value that failed, when the issue carries it. */
  value: unknown;
  /** The whole input (a body, a query). */
  root: unknown;
}

/**
 * Each schema's rule, by the schema's definition: `.meta()` and `.describe()` clone a schema with the same
 * definition, so its rule follows it (a WeakMap: zod's registries key by instance and deep-map their values' types).
 */
const rules = new WeakMap<object, Rule>();
const defOf = (schema: z.ZodType): object => (schema as unknown as { _zod: { def: object } })._zod.def;

/** Gives `schema` (and the clones `.meta()` makes of it) the rule its failures answer with, and returns it. */
export function rule<T extends z.ZodType>(schema: T, ruleOf: Rule): T {
  rules.set(defOf(schema), ruleOf);
  return schema;
}

/** What a cross-field rule adds with `ctx.addIssue({ code: 'custom', path, message, params: cross(code, extra) })`. */
export function cross(code: ProblemCode, extra?: Record<string, unknown>): { code: ProblemCode; extra?: Record<string, unknown> } {
  return extra ? { code, extra } : { code };
}

export interface RefusalOptions {
  /** The code when no rule covers the failing path. @default 'invalid_parameter' */
  fallback?: ProblemCode;
  /**
   * An array member whose index a refusal names as `item_index` (spec 4.2: a batch's failing item), its
   * path shown before the sentence.
   */
  indexed?: string;
}

/**
 * The refusal of the first issue of a failed parse of `schema`.
 * @example refusalOf(VideoRequest, VideoRequest.safeParse(body, { reportInput: true }).error!.issues, body)
 */
export function refusalOf(schema: z.ZodType, issues: readonly z.core.$ZodIssue[], root: unknown, { fallback = 'invalid_parameter', indexed }: RefusalOptions = {}): Refusal {
  const issue = deepest(issues[0]!);
  const path = issue.path;
  const where = spell(path);
  const value = 'input' in issue ? issue.input : valueAt(root, path);
  const failure: Failure = { where, issue, value, root };
  const index = indexed !== undefined && path[0] === indexed && typeof path[1] === 'number' ? path[1] : undefined;
  const params = issue.code === 'custom' ? (issue.params as { code?: ProblemCode; extra?: Record<string, unknown> } | undefined) : undefined;
  const found = ruleAt(schema, path);
  let refusal: Refusal;
  if (params?.code) {
    refusal = { code: params.code, detail: issue.message, ...(params.extra ? { extra: params.extra } : {}) };
  } else {
    const kind = issue.code as IssueKind;
    const code = found?.when?.[kind] ?? found?.code ?? fallback;
    const allowed = typeof found?.allowed === 'function' ? found.allowed(root) : found?.allowed;
    const detail = found?.detail?.(failure) ?? sentence(failure, allowed);
    const extra = { ...(allowed && code !== found?.when?.[kind] ? { allowed_values: allowed } : {}), ...(code === 'invalid_parameter' ? { parameter: where } : {}), ...found?.extra };
    refusal = { code, detail, ...(Object.keys(extra).length > 0 ? { extra } : {}) };
  }
  if (index === undefined) return refusal;
  const prefix = `${indexed}[${index}]`;
  const detail = refusal.detail.startsWith(prefix) ? refusal.detail : `${prefix}: ${refusal.detail}`;
  return { ...refusal, detail, extra: { ...refusal.extra, item_index: index } };
}

/**
 * Parses `input` with `schema`, or throws the `ServiceError` of its first failure.
 * @example const body = parseOrThrow(VideoRequest, json)
 */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown, options: RefusalOptions = {}): z.output<T> {
  const parsed = parseReporting(schema, input);
  if (parsed.success) return parsed.data;
  throw ServiceError.from(refusalOf(schema, parsed.error.issues, input, options));
}

/**
 * `schema.safeParse(input)`, and for a failure the issues with the inputs a refusal quotes. For speed:
 * a parse with a context (`reportInput`) skips zod's compiled fast path (1.4 µs more on a path, 1.7 on a
 * clip's body), so only what fails is parsed again with it.
 */
export function parseReporting<T extends z.ZodType>(schema: T, input: unknown): z.ZodSafeParseResult<z.output<T>> {
  const fast = schema.safeParse(input);
  return fast.success ? fast : schema.safeParse(input, { reportInput: true });
}

/** A union's failure holds its members' issues: the one that got furthest names the real problem. */
function deepest(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  const best = issue.errors.map((list) => list[0]).filter((inner): inner is z.core.$ZodIssue => inner !== undefined).sort((a, b) => b.path.length - a.path.length)[0];
  return best && best.path.length > 0 ? { ...best, path: [...issue.path, ...best.path] } : issue;
}

/** The deepest rule on `path` down from `schema`. */
export function ruleAt(schema: z.ZodType, path: readonly PropertyKey[]): Rule | undefined {
  let found: Rule | undefined;
  let current: z.ZodType | undefined = schema;
  for (let depth = 0; current; depth++) {
    for (const layer of layers(current)) found = rules.get(defOf(layer)) ?? found;
    if (depth === path.length) break;
    current = child(current, path[depth]!);
  }
  return found;
}

interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
}

/** A schema and the schemas it wraps (optional, nullable, default, pipe's input…), outermost first. */
function layers(schema: z.ZodType): z.ZodType[] {
  const out: z.ZodType[] = [];
  let current: z.ZodType | undefined = schema;
  while (current && out.length < 16) {
    out.push(current);
    const def: SchemaDef = (current as unknown as { _zod: { def: SchemaDef } })._zod.def;
    if (def.type === 'pipe') {
      // A transform's input side is what a client sends; a transform itself holds no schema.
      const input = def.in as unknown as { _zod: { def: { type: string } } } | undefined;
      current = input && input._zod.def.type !== 'transform' ? def.in : def.out;
    } else current = def.innerType;
  }
  return out;
}

/** The schema of one step of a path: an object's member, an array's element, a record's value. */
function child(schema: z.ZodType, key: PropertyKey): z.ZodType | undefined {
  for (const layer of layers(schema)) {
    const def = (layer as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    if (def.type === 'object') return (def.shape as Record<string, z.ZodType>)[String(key)] ?? (def.catchall as z.ZodType | undefined);
    if (def.type === 'array') return def.element as z.ZodType;
    if (def.type === 'record') return def.valueType as z.ZodType;
    if (def.type === 'union') {
      for (const option of def.options as z.ZodType[]) {
        const inner = child(option, key);
        if (inner) return inner;
      }
    }
  }
  return undefined;
}

/** `items[2].image_urls[0]` */
export function spell(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join('') || 'body';
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** The default sentence: what the field must be. */
function sentence({ where, issue, value }: Failure, allowed: readonly unknown[] | undefined): string {
  if (allowed && (issue.code === 'invalid_value' || issue.code === 'invalid_type' || issue.code === 'invalid_union')) return `${where}: must be one of ${allowed.join(', ')}.`;
  switch (issue.code) {
    case 'invalid_type':
      return value === undefined ? `${where} is required.` : `${where}: expected ${article(issue.expected === 'int' ? 'integer' : issue.expected)}.`;
    case 'too_big':
      if (issue.origin === 'string') return `${where} is ${typeof value === 'string' ? value.length : 'over'} characters; the limit is ${String(issue.maximum)}.`;
      if (issue.origin === 'array') return `${where} has at most ${String(issue.maximum)} items.`;
      return `${where} is at most ${String(issue.maximum)}.`;
    case 'too_small':
      if (issue.origin === 'string') return `${where} must not be empty.`;
      if (issue.origin === 'array') return `${where} has at least ${String(issue.minimum)} item${Number(issue.minimum) === 1 ? '' : 's'}.`;
      return `${where} is at least ${String(issue.minimum)}.`;
    case 'invalid_value':
      return `${where}: must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`;
    case 'invalid_format':
      return `${where}: not a valid ${issue.format}.`;
    default:
      return `${where}: ${issue.message}.`;
  }
}

function article(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}
