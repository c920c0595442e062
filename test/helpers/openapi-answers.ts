import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../src/service/contract/openapi.js';
import { faultClosedLists } from '../../src/service/testing/fault-check.js';
import type { Answer } from '../../src/service/http/respond.js';

// Checks answers of the service against the OpenAPI document made from the contract (issue 21): every
// JSON answer a test gets from a contract route must match the schema the document gives for its path,
// method and status. Registered for the whole suite by test/helpers/setup.ts.

type Json = Record<string, unknown>;

const doc = openApiDocument({ closedLists: faultClosedLists() });
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
// The document's components, so `$ref: '#/components/schemas/X'` resolves.
ajv.addSchema({ $id: 'openapi', components: doc.components } as Json, 'openapi');

/** The routes of the document, each with the regex of its path template. */
const templates = Object.entries(doc.paths).map(([path, operations]) => ({
  pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  operations: operations as Record<string, { responses: Record<string, { content?: Record<string, { schema: Json }> }> }>,
}));

const validators = new Map<string, ValidateFunction>();

function validatorFor(schema: Json, key: string): ValidateFunction {
  const known = validators.get(key);
  if (known) return known;
  {
    // Local refs are made relative to the registered document.
    const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')) as Json;
    const validate = ajv.compile(rebased);
    validators.set(key, validate);
    return validate;
  }
}

/**
 * What is wrong with an answer, against the document: `null` when it matches or is not a contract route's
 * (pages, files, the assistant endpoint). HEAD answers are GET's.
 */
export function checkAnswer(answer: Answer): string | null {
  // 405 is the router's answer for a method the path's template does not take, never an operation's.
  if (answer.status === 405) return null;
  const template = templates.find((candidate) => candidate.pattern.test(answer.path));
  if (!template) return null;
  const method = answer.method === 'HEAD' ? 'get' : answer.method.toLowerCase();
  const operation = template.operations[method];
  if (!operation) return `${answer.method} ${answer.path}: no such operation in the document`;
  const response = operation.responses[String(answer.status)];
  if (!response) return `${answer.method} ${answer.path} answered ${answer.status}, which the document does not list (${Object.keys(operation.responses).join(', ')})`;
  const mediaType = answer.contentType.split(';')[0]!.trim();
  const content = response.content?.[mediaType];
  if (!content) return `${answer.method} ${answer.path} ${answer.status}: ${mediaType} is not a content type the document gives (${Object.keys(response.content ?? {}).join(', ')})`;
  const validate = validatorFor(content.schema, `${method} ${answer.path.replace(/\d+/g, '{n}')} ${answer.status} ${mediaType}`);
  if (validate(answer.body)) return null;
  const errors = (validate.errors ?? []).slice(0, 5).map((error) => `${error.instancePath || '/'} ${error.message ?? ''}${error.params ? ` ${JSON.stringify(error.params)}` : ''}`);
  return `${answer.method} ${answer.path} ${answer.status} does not match the document: ${errors.join('; ')}`;
}
