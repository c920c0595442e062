import { afterEach } from 'vitest';
import { tapAnswers } from '../../src/service/http/taps.js';
import { checkAnswer } from './openapi-answers.js';

// Every answer a test gets from the service in this process is checked against the OpenAPI document
// (issue 21): a test whose requests got an answer the document does not describe fails.
const wrong: string[] = [];
tapAnswers((answer) => {
  const problem = checkAnswer(answer);
  if (problem) wrong.push(problem);
});

afterEach(() => {
  if (wrong.length === 0) return;
  const found = [...new Set(wrong.splice(0))];
  throw new Error(`answers that do not match the OpenAPI document:\n- ${found.slice(0, 10).join('\n- ')}`);
});
