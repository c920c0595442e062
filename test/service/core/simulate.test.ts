import { describe, expect, it } from 'vitest';
import { VIDEO_ERROR_CODES } from '../../../src/protocol/events.js';
import { PROBLEM_CODES } from '../../../src/protocol/problem.js';
import { RETRYABLE_ERROR_CODES } from '../../../src/service/contract/videos.js';
import { parseSimulation, REQUEST_CODES } from '../../../src/service/core/simulate.js';

describe('simulate:<code> markers', () => {
  it('makes every video error_code of spec 2.9 a task-level outcome, sticky or not', () => {
    for (const code of VIDEO_ERROR_CODES) {
      expect(parseSimulation(`a fox simulate:${code}`)).toEqual({ kind: 'task', code, sticky: false });
      expect(parseSimulation(`simulate:${code}:sticky in the snow`)).toEqual({ kind: 'task', code, sticky: true });
    }
  });

  it('makes the request-level codes a problem, upstream_busy as a 503 only with request:', () => {
    for (const code of REQUEST_CODES) {
      expect(parseSimulation(`simulate:request:${code}`)).toEqual({ kind: 'request', code });
      expect(PROBLEM_CODES[code].status).toBeGreaterThanOrEqual(422);
    }
    expect(parseSimulation('simulate:generation_paused')).toEqual({ kind: 'request', code: 'generation_paused' });
    expect(parseSimulation('simulate:region_unavailable')).toEqual({ kind: 'request', code: 'region_unavailable' });
    expect(parseSimulation('simulate:upstream_busy')).toEqual({ kind: 'task', code: 'upstream_busy', sticky: false });
  });

  it('ignores what is not a marker', () => {
    for (const prompt of [null, '', 'a fox', 'simulate:nothing', 'xsimulate:upstream_busy', 'simulate:upstream_busy_x', 'simulate:request:content_rejected', 'simulate:generation_paused:sticky']) {
      expect(parseSimulation(prompt)).toBeNull();
    }
  });

  it('knows the retryable error_codes of spec 3.1', () => {
    expect([...RETRYABLE_ERROR_CODES].sort()).toEqual(['upstream_busy', 'upstream_error', 'upstream_timeout', 'upstream_unavailable']);
  });
});

describe('parseSimulation beside other markers (issue 22)', () => {
  it('skips markers that name no code (webhook chaos, unknown words) and reads the first known one', () => {
    expect(parseSimulation('a fox simulate:webhook_duplicate simulate:upstream_busy')).toEqual({ kind: 'task', code: 'upstream_busy', sticky: false });
    expect(parseSimulation('simulate:nothing simulate:webhook_late simulate:generation_paused')).toEqual({ kind: 'request', code: 'generation_paused' });
    expect(parseSimulation('simulate:webhook_cut simulate:webhook_late')).toBeNull();
    expect(parseSimulation('simulate:content_rejected simulate:upstream_busy')).toEqual({ kind: 'task', code: 'content_rejected', sticky: false });
  });
});
