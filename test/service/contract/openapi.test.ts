import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import createClient from 'openapi-fetch';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { z } from 'zod';
import { ImageRequest } from '../../../src/service/contract/images.js';
import { openApiDocument } from '../../../src/service/contract/openapi.js';
import { parseOrThrow, ServiceError } from '../../../src/service/contract/problems.js';
import { commonProblems, routeOf, ROUTES, type RouteSpec } from '../../../src/service/contract/routes.js';
import { ASSISTANT_TOOL_NAMES } from '../../../src/service/contract/assistant.js';
import type { ProblemCode } from '../../../src/protocol/problem.js';
import { checkFaultRule, faultClosedLists } from '../../../src/service/testing/fault-check.js';
import { openapi as openapiCommand } from '../../../src/cli/commands/openapi.js';
import { FaultRuleRequest } from '../../../src/service/testing/contract/test-helpers.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const run = promisify(execFile);

type Operation = { operationId: string; security?: unknown[]; parameters?: unknown[]; requestBody?: unknown; responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }> };

describe('the OpenAPI 3.1 document (issue 21), made from contract/routes.ts', () => {
  const doc = openApiDocument({ origin: 'http://127.0.0.1:8080', closedLists: faultClosedLists() });
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op: op as unknown as Operation })));

  it('has every route of the contract once, with its operationId, and nothing else', () => {
    expect(operations.map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort()).toEqual(ROUTES.map((route) => `${route.method} ${route.path}`).sort());
    const ids = operations.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const route of ROUTES) expect(doc.paths[route.path]![route.method.toLowerCase()]!.operationId).toBe(route.operationId);
  });

  it('describes every endpoint of spec section 4', () => {
    const section4 = ['POST /v1/videos', 'POST /v1/videos/batch', 'GET /v1/videos', 'GET /v1/videos/{id}', 'DELETE /v1/videos/{id}', 'POST /v1/videos/{id}/retry', 'POST /v1/images', 'GET /v1/images', 'GET /v1/images/{id}', 'DELETE /v1/images/{id}', 'POST /v1/assets', 'GET /v1/assets', 'GET /v1/assets/{id}', 'DELETE /v1/assets/{id}', 'GET /v1/account', 'GET /v1/pricing', 'GET /v1/media/{file}'];
    const present = new Set(operations.map(({ method, path }) => `${method.toUpperCase()} ${path}`));
    for (const endpoint of section4) expect(present.has(endpoint), endpoint).toBe(true);
  });

  it('takes the bearer key everywhere but on pricing, media and the document itself (spec 5.1)', () => {
    expect(doc.security).toEqual([{ bearer: [] }]);
    const open = operations.filter(({ op }) => Array.isArray(op.security) && op.security.length === 0).map(({ op }) => op.operationId).sort();
    expect(open).toEqual(['getMedia', 'getOpenApi', 'getPricing']);
  });

  it('gives every keyed response the rate-limit headers, and the idempotent POSTs the Idempotency-Key and Idempotent-Replayed', () => {
    for (const { op } of operations) {
      if (op.security) continue;
      for (const [status, response] of Object.entries(op.responses)) expect(Object.keys(response.headers ?? {}), `${op.operationId} ${status}`).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']));
    }
    const idempotent = operations.filter(({ op }) => JSON.stringify(op.parameters ?? []).includes('IdempotencyKey')).map(({ op }) => op.operationId).sort();
    expect(idempotent).toEqual(['createImage', 'createVideo', 'createVideoBatch']);
    expect(Object.keys(doc.paths['/v1/videos']!.post!.responses as object)).toEqual(expect.arrayContaining(['202', '400', '401', '402', '409', '422', '429', '500', '503']));
  });

  it('answers every error as problem+json with the codes the route can answer, and a 4xx on every operation that takes input or a key', () => {
    for (const { op } of operations) {
      const problems = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
      for (const [, response] of problems) expect(Object.keys(response.content ?? {})).toEqual(['application/problem+json']);
      if (!['getPricing', 'getOpenApi'].includes(op.operationId)) expect(problems.some(([status]) => status.startsWith('4')), op.operationId).toBe(true);
    }
    const bad = (doc.paths['/v1/videos']!.post!.responses as Record<string, { content: Record<string, { schema: { allOf: Array<{ properties?: { code: { enum: string[] } } }> } }> }>)['400']!;
    expect(bad.content['application/problem+json']!.schema.allOf[1]!.properties!.code.enum).toEqual(expect.arrayContaining(['invalid_duration', 'missing_input', 'invalid_json', 'invalid_idempotency_key']));
  });

  it('describes the clip body with the spec’s own constraints: bounds, enums, the deprecated alias, formats', () => {
    const body = (doc.components as { schemas: Record<string, { properties: Record<string, { anyOf?: Array<Record<string, unknown>>; deprecated?: boolean }> }> }).schemas.CreateVideoRequest!;
    expect(body.properties.duration!.anyOf![0]).toMatchObject({ type: 'integer', minimum: 4, maximum: 30 });
    expect(body.properties.ratio!.anyOf![0]).toMatchObject({ enum: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'] });
    expect(body.properties.image_url!.deprecated).toBe(true);
    expect(body.properties.image_urls!.anyOf![0]).toMatchObject({ type: 'array', maxItems: 5 });
    expect(body.properties.callback_url!.anyOf![0]).toMatchObject({ maxLength: 2048 });
    const upload = doc.paths['/v1/assets']!.post!.requestBody as { content: Record<string, unknown> };
    expect(Object.keys(upload.content)).toEqual(['multipart/form-data']);
  });

  it('passes Redocly’s recommended rules (redocly.yaml turns one off, with its reason)', async () => {
    const dir = mkdtempSync(join(ROOT, 'node_modules', '.cliphook-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc));
      const { stdout, stderr } = await run(join(ROOT, 'node_modules/.bin/redocly'), ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], { cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, timeout: 60_000 }).catch((error: { stdout: string; stderr: string }) => error);
      const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string }> };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`), stderr).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the rules the document once stated only in words, as schema (issue 29 item 14)', () => {
  const doc = openApiDocument({ closedLists: faultClosedLists() });
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'openapi', components: doc.components } as object, 'openapi');
  const schemas = (doc.components as { schemas: Record<string, object> }).schemas;
  /** Whether the document's schema `id` takes `body`. */
  const documented = (id: string, body: unknown) => ajv.validate(JSON.parse(JSON.stringify(schemas[id]).replaceAll('"#/components/', '"openapi#/components/')) as object, body);
  /** What the service answers for `body`: `ok`, or the refusal's code and the member it names. */
  const answered = (schema: z.ZodType, body: unknown) => {
    try {
      parseOrThrow(schema, body);
      return 'ok';
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      return `${error.code} ${String(error.extra?.parameter ?? '')}`.trim();
    }
  };

  it("a fault rule's match takes operation, or method and/or path, not both; its action exactly one of problem, delay_ms, cut, hang; retry_after only with problem", () => {
    const cases: Array<[unknown, string]> = [
      [{ match: { operation: 'getVideo' }, action: { problem: 'upstream_busy' } }, 'ok'],
      [{ match: { method: 'GET', path: '/v1/videos/{id}' }, action: { delay_ms: 10 } }, 'ok'],
      [{ match: { path: '/v1/videos' }, action: { cut: 'before' } }, 'ok'],
      [{ match: {}, action: { hang: true } }, 'ok'],
      [{ match: { account: 2 }, action: { problem: 'upstream_busy', retry_after: 3 } }, 'ok'],
      [{ match: { operation: 'getVideo', method: 'GET' }, action: { problem: 'upstream_busy' } }, 'invalid_parameter match.operation'],
      [{ match: { operation: 'getVideo', path: '/v1/videos/{id}' }, action: { problem: 'upstream_busy' } }, 'invalid_parameter match.operation'],
      [{ match: { operation: 'getVideo' }, action: {} }, 'invalid_parameter action'],
      [{ match: { operation: 'getVideo' }, action: { problem: 'upstream_busy', hang: true } }, 'invalid_parameter action'],
      [{ match: { operation: 'getVideo' }, action: { delay_ms: 5, cut: 'after' } }, 'invalid_parameter action'],
      [{ match: { operation: 'getVideo' }, action: { delay_ms: 5, retry_after: 1 } }, 'invalid_parameter action.retry_after'],
      [{ match: { operation: 'getVideo' }, action: { retry_after: 1 } }, 'invalid_parameter action'],
    ];
    for (const [body, expected] of cases) {
      expect(answered(FaultRuleRequest, body), JSON.stringify(body)).toBe(expected);
      expect(documented('CreateFaultRuleRequest', body), JSON.stringify(body)).toBe(expected === 'ok');
    }
  });

  it("an image's fields need a template (null is absent, as the service reads it)", () => {
    const cases: Array<[unknown, string]> = [
      [{ template: 'poster', fields: { headline: 'Grand opening' } }, 'ok'],
      [{ description: 'a fox', fields: null }, 'ok'],
      [{ description: 'a fox', template: null, fields: null }, 'ok'],
      [{ description: 'a fox' }, 'ok'],
      [{ description: 'a fox', fields: { headline: 'x' } }, 'invalid_parameter fields'],
      [{ description: 'a fox', fields: {} }, 'invalid_parameter fields'],
      [{ description: 'a fox', template: null, fields: { headline: 'x' } }, 'invalid_parameter fields'],
    ];
    for (const [body, expected] of cases) {
      expect(answered(ImageRequest, body), JSON.stringify(body)).toBe(expected);
      expect(documented('CreateImageRequest', body), JSON.stringify(body)).toBe(expected === 'ok');
    }
  });

  it('an image needs a description (or its alias prompt), a template or a character: {} fails the document as the service refuses it, missing_input', () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'missing_input'],
      [{ description: null, prompt: null, template: null }, 'missing_input'],
      [{ description: '  \n ' }, 'missing_input'],
      [{ quality: 'hd', count: 4 }, 'missing_input'],
      [{ type: 'image' }, 'missing_input'],
      [{ description: 'a fox' }, 'ok'],
      [{ prompt: 'a fox' }, 'ok'],
      [{ description: '  ', prompt: 'a fox' }, 'invalid_parameter prompt'],
      [{ template: 'poster', fields: { headline: 'Grand opening' } }, 'ok'],
      [{ type: 'character', character: { age: '26-35', style: 'photo' } }, 'ok'],
    ];
    for (const [body, expected] of cases) {
      expect(answered(ImageRequest, body), JSON.stringify(body)).toBe(expected);
      // A refusal other than missing_input is the service's alone (two members that disagree).
      if (!expected.startsWith('invalid_parameter')) expect(documented('CreateImageRequest', body), JSON.stringify(body)).toBe(expected === 'ok');
    }
  });

  it("a fault rule's match.operation, match.path and action.problem are closed lists: enums of what a rule may name, each taken by the service", () => {
    const rule = (schemas.CreateFaultRuleRequest as { properties: Record<string, { properties: Record<string, Record<string, unknown>> }> }).properties;
    const operation = rule.match!.properties.operation!;
    const path = rule.match!.properties.path!;
    const problem = rule.action!.properties.problem!;
    for (const member of [operation, path, problem]) {
      expect(member.pattern).toBeUndefined();
      expect(Array.isArray(member.enum) && member.enum.length > 0).toBe(true);
    }
    const faultable = (ROUTES as readonly RouteSpec[]).filter((route) => route.tag !== 'Test helpers');
    expect([...(operation.enum as string[])].sort()).toEqual([...faultable.map((route) => route.operationId), ...ASSISTANT_TOOL_NAMES].sort());
    expect([...(path.enum as string[])].sort()).toEqual([...new Set(faultable.map((route) => route.path))].sort());
    expect(problem.enum).toEqual(expect.arrayContaining(['upstream_busy', 'not_found', 'insufficient_credits', 'rate_limit_exceeded']));
    // Every value listed is one the service takes, and one outside the lists is refused by both.
    for (const name of operation.enum as string[]) expect(() => checkFaultRule({ match: { operation: name }, action: { delay_ms: 1 } }), name).not.toThrow();
    for (const name of path.enum as string[]) expect(() => checkFaultRule({ match: { path: name }, action: { delay_ms: 1 } }), name).not.toThrow();
    for (const code of problem.enum as ProblemCode[]) {
      const route = faultable.find((each) => each.problems.includes(code) || commonProblems(each).includes(code))!;
      expect(() => checkFaultRule({ match: { operation: route.operationId }, action: { problem: code } }), code).not.toThrow();
    }
    for (const [body, parameter] of [
      [{ match: { operation: 'getVideos' }, action: { delay_ms: 1 } }, 'match.operation'],
      [{ match: { operation: 'createTestAccount' }, action: { delay_ms: 1 } }, 'match.operation'],
      [{ match: { path: '/v1/videos/7' }, action: { delay_ms: 1 } }, 'match.path'],
      [{ match: { operation: 'getVideo' }, action: { problem: 'no_such_code' } }, 'action.problem'],
    ] as const) {
      expect(documented('CreateFaultRuleRequest', body), JSON.stringify(body)).toBe(false);
      expect(() => checkFaultRule(parseOrThrow(FaultRuleRequest, body)), JSON.stringify(body)).toThrow(expect.objectContaining({ code: 'invalid_parameter', extra: expect.objectContaining({ parameter }) }));
    }
  });

  it('marks a request body required exactly where the service refuses a request without one: POST /test_helpers/accounts takes none', () => {
    const requestBody = (route: RouteSpec) => (doc.paths[route.path]![route.method.toLowerCase()] as { requestBody?: { required?: boolean } }).requestBody;
    expect(requestBody(routeOf('createTestAccount'))?.required ?? false).toBe(false);
    expect(requestBody(routeOf('createImage'))?.required).toBe(true);
    expect(requestBody(routeOf('createFaultRule'))?.required).toBe(true);
    for (const route of (ROUTES as readonly RouteSpec[]).filter((each) => each.body)) {
      // The service reads a request without a body as {} (runner/steps.ts): what it takes, the document must.
      expect(requestBody(route)?.required ?? false, route.operationId).toBe(!route.body!.safeParse({}).success);
    }
  });

  it('gives every integer parameter a maximum, and the service takes it and refuses one more with the same code', () => {
    const checked: string[] = [];
    for (const route of ROUTES as readonly RouteSpec[]) {
      const parameters = ((doc.paths[route.path]![route.method.toLowerCase()] as Operation).parameters ?? []) as Array<{ name: string; in: string; schema?: { type?: string; maximum?: number } }>;
      for (const parameter of parameters.filter((each) => each.schema?.type === 'integer')) {
        const where = `${route.operationId} ${parameter.in} ${parameter.name}`;
        expect(parameter.schema!.maximum, where).toBeTypeOf('number');
        if (parameter.in !== 'query') continue;
        const schema = (route.query!.shape as Record<string, z.ZodType>)[parameter.name]!;
        const max = parameter.schema!.maximum!;
        expect(schema.safeParse(String(max)).success, `${where} takes ${max}`).toBe(true);
        const above = String(BigInt(max) + 1n);
        expect(schema.safeParse(above).success, `${where} refuses ${above}`).toBe(false);
        checked.push(where);
      }
    }
    expect(checked).toEqual(expect.arrayContaining(['listImages query before', 'listVideos query offset', 'getImage query wait', 'listRequests query account', 'clearRequests query account', 'getMedia query exp']));
    // 2^53 is refused naming the bound the document gives, with the code of any bad integer.
    expect(answered((routeOf('listImages').query as z.ZodObject), { before: String(2 ** 53) })).toBe('invalid_parameter before');
    expect(() => parseOrThrow(routeOf('listImages').query as z.ZodType, { before: String(2 ** 53) })).toThrow('before is an integer from 1 to 9007199254740991.');
  });
});

describe('a typed client generated from the document (openapi-typescript + openapi-fetch)', () => {
  let svc: StartedService;
  let dir: string;
  beforeAll(async () => {
    svc = await startService();
    dir = mkdtempSync(join(ROOT, 'node_modules', '.cliphook-client-'));
  });
  afterAll(async () => {
    await svc.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('type-checks correct calls and refuses a body with duration: "five"', async () => {
    const types = astToString(await openapiTS(openApiDocument() as never));
    mkdirSync(dir, { recursive: true });
    // A .ts, not a .d.ts, so it is checked with skipLibCheck on (the SDK's own .d.ts files are not ours).
    writeFileSync(join(dir, 'api.ts'), types);
    writeFileSync(
      join(dir, 'client.ts'),
      [
        "import createClient from 'openapi-fetch';",
        "import type { paths } from './api.js';",
        "const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:8080', headers: { authorization: 'Bearer sk_x' } });",
        'export async function ok() {',
        "  const { data, error } = await client.POST('/v1/videos', { body: { prompt: 'a fox', duration: 10, model: 'cinema' }, params: { header: { 'Idempotency-Key': 'k-1' } } });",
        "  if (data) { const id: number = data.id; const status: 'pending' = data.status; return { id, status }; }",
        '  const code: string = error.code;',
        "  const page = await client.GET('/v1/videos', { params: { query: { limit: 10, status: 'done' } } });",
        '  return { code, total: page.data?.total };',
        '}',
        'export async function wrong() {',
        '  // @ts-expect-error duration is an integer, not a word',
        "  await client.POST('/v1/videos', { body: { prompt: 'a fox', duration: 'five' } });",
        '  // @ts-expect-error ratio is one of the six',
        "  await client.POST('/v1/videos', { body: { prompt: 'a fox', ratio: '2:1' } });",
        '  // @ts-expect-error no such path',
        "  await client.GET('/v1/movies');",
        '}',
      ].join('\n'),
    );
    const program = ts.createProgram([join(dir, 'client.ts')], { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, skipLibCheck: true, types: [] });
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName.startsWith(dir)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
  }, 60_000);

  it('talks to a running service: 202 typed data, then the 400 problem as typed error', async () => {
    const client = createClient<{
      '/v1/videos': { post: { requestBody: { content: { 'application/json': Record<string, unknown> } }; responses: { 202: { content: { 'application/json': { id: number; status: string } } }; 400: { content: { 'application/problem+json': { code: string } } } } } };
    }>({ baseUrl: svc.origin, headers: { authorization: `Bearer ${svc.apiKey}` } });
    const made = await client.POST('/v1/videos', { body: { prompt: 'a fox' } });
    expect(made.response.status).toBe(202);
    expect(made.data).toMatchObject({ status: 'pending' });
    const refused = await client.POST('/v1/videos', { body: { prompt: 'a fox', duration: 99 } });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({ code: 'invalid_duration' });
  });

  it('is served at GET /v1/openapi.json without a key, naming the service’s origin', async () => {
    const res = await fetch(`${svc.url}/openapi.json`);
    expect(res.status).toBe(200);
    const served = (await res.json()) as { openapi: string; servers: Array<{ url: string }> };
    expect(served.openapi).toBe('3.1.0');
    expect(served.servers[0]!.url).toBe(svc.origin);
  });

  it('is the document `cliphook openapi` writes, the fault rules’ closed lists as enums in both', async () => {
    const served = (await (await fetch(`${svc.url}/openapi.json`)).json()) as { components: { schemas: Record<string, { properties: Record<string, { properties: Record<string, { enum?: unknown }> }> }> } };
    let written = '';
    openapiCommand({ origin: svc.origin }, (text) => (written += text));
    expect(JSON.parse(written)).toEqual(served);
    const rule = served.components.schemas.CreateFaultRuleRequest!.properties;
    expect(rule.match!.properties.operation!.enum).toEqual(expect.arrayContaining(['getVideo', 'create_clip']));
    expect(rule.action!.properties.problem!.enum).toEqual(expect.arrayContaining(['upstream_busy']));
  });
});
