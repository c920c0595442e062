import { afterEach } from 'vitest';
import { tapAnswers, type Answer } from '../../src/service/http/respond.js';

// Every answer a test gets from the service in this process is checked against the OpenAPI document
// (issue 21): a test whose requests got an answer the document does not describe fails. The document and
// its validators are loaded by the first test file that gets an answer, so the files that never talk to
// the service (most of the suite) do not pay for building them.
const seen: Answer[] = [];
tapAnswers((answer) => void seen.push(answer));

afterEach(async () => {
  if (seen.length === 0) return;
  const { checkAnswer } = await import('./openapi-answers.js');
  const wrong = seen.splice(0).flatMap((answer) => checkAnswer(answer) ?? []);
  if (wrong.length === 0) return;
  const found = [...new Set(wrong)];
  throw new Error(`answers that do not match the OpenAPI document:\n- ${found.slice(0, 10).join('\n- ')}`);
});
