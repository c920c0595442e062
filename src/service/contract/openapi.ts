import { z } from 'zod';
import { PROBLEM_CODES, type ProblemCode } from '../../protocol/problem.js';
import { IdempotencyKey, Problem } from './common.js';
import { API_VERSION, LIMITS } from './limits.js';
import { bodyOptional, commonProblems, ROUTES, type RouteSpec } from './routes.js';

/**
 * The OpenAPI 3.1 document of the service, made from `routes.ts` (and the closed lists it is given, see
 * `OpenApiOptions.closedLists`): zod 4 writes JSON Schema 2020-12,
 * which is OpenAPI 3.1's own dialect, so every schema goes in as it is. Served at GET /v1/openapi.json and
 * written by `cliphook openapi`.
 */

type Json = Record<string, unknown>;

export { API_VERSION } from './limits.js';
const SCHEMA_REF = '#/components/schemas/';
const TARGET = 'draft-2020-12' as const;

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { description: `Requests allowed per minute for this key (spec 4, 8: ${LIMITS.requestsPerWindow}).`, schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'When the window ends, in Unix seconds.', schema: { type: 'integer' } },
} as const;

const HEADERS: Record<string, Json> = {
  ...RATE_LIMIT_HEADERS,
  'Retry-After': { description: 'Seconds after which the same request may succeed.', schema: { type: 'integer' } },
  'Idempotent-Replayed': { description: 'true when this is the stored response of an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
  'WWW-Authenticate': { description: 'Bearer challenge (spec 5.4).', schema: { type: 'string' } },
  Location: { description: 'Where the file is.', schema: { type: 'string', format: 'uri' } },
  'Content-Range': { description: 'The byte range sent.', schema: { type: 'string' } },
  'Accept-Ranges': { description: 'bytes', schema: { type: 'string' } },
  'Content-Disposition': { description: 'attachment, with download=1.', schema: { type: 'string' } },
};

/**
 * Schemas the contract writes as patterns whose values are a closed list made from the routes (which are
 * made from the contract), each with that list: the document gives each as the enum it is.
 */
export type ClosedLists = ReadonlyMap<z.ZodType, readonly string[]>;

/** What zod's JSON Schema writer is told: a closed list is an enum, not its pattern. */
function writerOptions(io: 'input' | 'output', lists: ClosedLists) {
  return {
    target: TARGET,
    io,
    unrepresentable: 'any' as const,
    override: ({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: Json }) => {
      const values = lists.get(zodSchema as z.ZodType);
      if (!values) return;
      delete jsonSchema.pattern;
      jsonSchema.enum = [...values];
    },
  };
}

/** The name of a route's request body schema in the components. */
const bodyName = (route: RouteSpec) => `${route.operationId[0]!.toUpperCase()}${route.operationId.slice(1)}Request`;

export interface OpenApiOptions {
  /** The `servers` entry: where the service answers. @default 'http://127.0.0.1:8080' */
  origin?: string;
  /**
   * The closed lists to write as enums: the composition root (GET /v1/openapi.json) and `cliphook openapi`
   * give the fault rules' (`faultClosedLists`, testing/fault-check.ts), so both write the same document.
   * @default none: each such schema is written as its pattern
   */
  closedLists?: ClosedLists;
}

/**
 * @example
 * const doc = openApiDocument({ origin: 'http://127.0.0.1:8080' });
 * doc.paths['/v1/videos'].post.operationId // 'createVideo'
 */
export function openApiDocument({ origin = 'http://127.0.0.1:8080', closedLists = new Map() }: OpenApiOptions = {}): Json & { paths: Record<string, Record<string, Json>> } {
  const routes: readonly RouteSpec[] = ROUTES;
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, closedLists);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Clip and Image Generation Service (cliphook simulator)',
      version: API_VERSION,
      description: 'The v1 API of the Clip and Image Generation Service as `cliphook serve` simulates it: every route, field, status and error code of the spec, plus the account settings and test helpers of the simulator. Errors are application/problem+json (RFC 9457) with a stable `code`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: origin, description: 'cliphook serve' }],
    security: [{ bearer: [] }],
    tags: [...new Set(routes.map((route) => route.tag))].map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key> (spec 5).' },
        admin: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <admin token>: the test helpers’ admin token, printed by `cliphook serve` (`admin_token` with --json) and answered by startService as `adminToken`.' },
      },
      headers: Object.fromEntries(Object.entries(HEADERS).map(([name, header]) => [name.replace(/[^A-Za-z0-9]/g, ''), header])),
      parameters: {
        IdempotencyKey: { name: 'Idempotency-Key', in: 'header', required: false, description: 'Spec 4.1 and 7.', schema: schemaOf(IdempotencyKey, 'input', closedLists) },
      },
      schemas: components(routes, closedLists),
    },
  };
}

const TAGS: Record<string, string> = {
  Videos: 'Clips (spec 4.1-4.6)',
  Images: 'Still images (spec 4.7-4.11)',
  Assets: 'Reference photos (spec 4.12-4.15)',
  Account: 'Balance, usage and prices (spec 4.16-4.17)',
  Media: 'Signed media links (spec 4.18)',
  Settings: 'The account settings of the web UI (spec 5), served by the simulator',
  'Test helpers': 'Simulator controls for tests (Stripe-style test clocks)',
  Document: 'This document',
};

function operation(route: RouteSpec, lists: ClosedLists): Json {
  const keyed = route.auth !== 'none';
  const parameters: Json[] = [];
  for (const [name, schema] of Object.entries(route.params?.shape ?? {})) {
    // Described by what it means (an integer id), as a client generator needs it, not by its path text.
    const described = schemaOf(schema as z.ZodType, 'output', lists, true);
    parameters.push({ name, in: 'path', required: true, ...(typeof described.description === 'string' ? { description: described.description } : {}), schema: described });
  }
  for (const [name, schema] of Object.entries(route.query?.shape ?? {})) {
    const described = schemaOf(schema as z.ZodType, 'output', lists, true);
    const required = !(schema as z.ZodType).safeParse(undefined).success;
    parameters.push({ name, in: 'query', required, ...(typeof described.description === 'string' ? { description: described.description } : {}), schema: described });
  }
  if (route.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  const responses: Record<string, Json> = {};
  // The admin token is no account: it has no rate window.
  const limitHeaders = keyed && route.auth !== 'admin' ? headerRefs(Object.keys(RATE_LIMIT_HEADERS)) : {};
  for (const [status, response] of Object.entries(route.responses)) {
    const headers = { ...limitHeaders, ...headerRefs(response.headers ?? []) };
    const content = response.schema
      ? { 'application/json': { schema: refOrSchema(response.schema, 'output', lists) } }
      : response.files
        ? Object.fromEntries(response.files.map((type) => [type, { schema: { type: 'string', contentMediaType: type } }]))
        : undefined;
    responses[status] = { description: response.description, ...(Object.keys(headers).length > 0 ? { headers } : {}), ...(content ? { content } : {}) };
  }
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of [...route.problems, ...commonProblems(route)]) {
    const status = PROBLEM_CODES[code].status;
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
  }
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers = {
      ...limitHeaders,
      // Retry-After comes with the refusals that waiting ends (429, 409 in progress, 503, media not ready); a
      // 402 or 451 is retryable too, but only after someone acts (a top-up, another region), so it has none.
      ...(codes.some((code) => PROBLEM_CODES[code].retryable && status !== 402 && status !== 451) ? headerRefs(['Retry-After']) : {}),
      ...(status === 401 ? headerRefs(['WWW-Authenticate']) : {}),
    };
    responses[String(status)] = {
      description: codes.map((code) => `\`${code}\`: ${PROBLEM_CODES[code].title}`).join('; '),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: { 'application/problem+json': { schema: { allOf: [{ $ref: `${SCHEMA_REF}Problem` }, { type: 'object', properties: { code: { type: 'string', enum: codes } } }] } } },
    };
  }
  const body = route.body
    ? { required: !bodyOptional(route.body), content: { 'application/json': { schema: { $ref: `${SCHEMA_REF}${idOf(route.body) ?? bodyName(route)}` } } } }
    : route.multipart
      ? { required: true, content: { 'multipart/form-data': { schema: { $ref: `${SCHEMA_REF}${idOf(route.multipart) ?? bodyName(route)}` }, encoding: { file: { contentType: 'image/jpeg, image/png, image/webp, image/gif, image/heic' } } } } }
      : undefined;
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.spec ? { description: `Spec section ${route.spec}.` } : {}),
    tags: [route.tag],
    ...(keyed ? (route.auth === 'admin' ? { security: [{ admin: [] }] } : route.auth === 'admin_or_key' ? { security: [{ admin: [] }, { bearer: [] }] } : {}) : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    responses,
  };
}

function headerRefs(names: readonly string[]): Record<string, Json> {
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name.replace(/[^A-Za-z0-9]/g, '')}` }]));
}

/** The `id` a schema was given with `.meta({ id })`. */
function idOf(schema: z.ZodType): string | undefined {
  const id = z.globalRegistry.get(schema)?.id;
  return typeof id === 'string' ? id : undefined;
}

function refOrSchema(schema: z.ZodType, io: 'input' | 'output', lists: ClosedLists): Json {
  const id = idOf(schema);
  return id ? { $ref: `${SCHEMA_REF}${id}` } : schemaOf(schema, io, lists);
}

/** Every schema with an id that the routes use, and the routes' request bodies, as components. */
function components(routes: readonly RouteSpec[], lists: ClosedLists): Record<string, Json> {
  const outputs = z.registry<{ id: string }>();
  const inputs = z.registry<{ id: string }>();
  const add = (registry: typeof outputs, schema: z.ZodType, id?: string) => {
    for (const named of withIds(schema)) if (!registry.has(named)) registry.add(named, { id: idOf(named)! });
    if (id && !registry.has(schema)) registry.add(schema, { id });
  };
  add(outputs, Problem);
  for (const route of routes) {
    for (const response of Object.values(route.responses)) if (response.schema) add(outputs, response.schema);
    if (route.body) add(inputs, route.body, idOf(route.body) ? undefined : bodyName(route));
    if (route.multipart) add(inputs, route.multipart, idOf(route.multipart) ? undefined : bodyName(route));
  }
  const schemas: Record<string, Json> = {};
  for (const [registry, io] of [[outputs, 'output'], [inputs, 'input']] as const) {
    const written = z.toJSONSchema(registry, { ...writerOptions(io, lists), uri: (id) => `${SCHEMA_REF}${id}` }) as { schemas: Record<string, Json> };
    for (const [id, schema] of Object.entries(written.schemas)) schemas[id] = tidy(schema, io === 'input');
  }
  return Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
}

/** A schema inline (a parameter's); `safeBounds` keeps the integer bounds a request is refused beyond. */
function schemaOf(schema: z.ZodType, io: 'input' | 'output', lists: ClosedLists, safeBounds = false): Json {
  return tidy(z.toJSONSchema(schema, writerOptions(io, lists)) as Json, safeBounds);
}

/** The schemas with an `id` inside `schema`, itself included. */
function withIds(schema: z.ZodType, seen = new Set<unknown>()): z.ZodType[] {
  if (seen.has(schema)) return [];
  seen.add(schema);
  const found = idOf(schema) ? [schema] : [];
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  const children = [def.innerType, def.in, def.out, def.element, def.valueType, ...(Array.isArray(def.options) ? def.options : []), ...Object.values((def.shape as Record<string, unknown> | undefined) ?? {})];
  for (const child of children) if (child && typeof child === 'object' && '_zod' in child) found.push(...withIds(child as z.ZodType, seen));
  return found;
}

/**
 * Drops what OpenAPI does not need: `$schema` and `$id` of components, and the bounds zod puts on every
 * integer of an answer. A request's integers keep them (`safeBounds`): the service refuses 2^53 and beyond,
 * and a validator of the document must too.
 */
function tidy(value: Json, safeBounds = false): Json {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, child] of Object.entries(node as Json)) {
      if (key === '$schema' || key === '$id') continue;
      if (!safeBounds && ((key === 'minimum' && child === Number.MIN_SAFE_INTEGER) || (key === 'maximum' && child === Number.MAX_SAFE_INTEGER))) continue;
      out[key] = walk(child);
    }
    return out;
  };
  return walk(value) as Json;
}
