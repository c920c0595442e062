import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../../src/service/contract/openapi.js';
import { MAX_FAULT_RULES } from '../../../../src/service/testing/faults.js';
import { MAX_PATH_FILTER_CHARS, MAX_PATH_FILTER_SEGMENTS } from '../../../../src/service/testing/journal.js';

// Issue 29 follow-up item 5: the bounds a client meets as a 400 are stated in the document, from the
// constants the service enforces (no copy of the numbers).

type Operation = { summary?: string; description?: string; parameters?: Array<{ name: string; in: string; description?: string }> };

describe('the test helpers in the OpenAPI document state their bounds', () => {
  const doc = openApiDocument({ origin: 'http://127.0.0.1:8080' });
  const operation = (path: string, method: string) => doc.paths[path]![method] as unknown as Operation;

  it(`createFaultRule names the limit of ${MAX_FAULT_RULES} rules per account and service-wide`, () => {
    const create = operation('/test_helpers/faults', 'post');
    expect(`${create.summary} ${create.description ?? ''}`).toContain(`at most ${MAX_FAULT_RULES} rules per account and ${MAX_FAULT_RULES} service-wide`);
  });

  it(`the journal's path filter names its ${MAX_PATH_FILTER_CHARS} characters and ${MAX_PATH_FILTER_SEGMENTS} segments`, () => {
    const path = operation('/test_helpers/requests', 'get').parameters!.find((parameter) => parameter.in === 'query' && parameter.name === 'path')!;
    expect(path.description).toContain(`at most ${MAX_PATH_FILTER_CHARS} characters and ${MAX_PATH_FILTER_SEGMENTS} segments`);
  });
});
