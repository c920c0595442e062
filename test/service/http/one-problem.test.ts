// Issue 31 item 1: one problem builder. Every problem body of the service comes from `problemOf` (respond.ts),
// the /mcp refusals and a fault rule's answer included, and the top-up page's path is written once
// (contract/settings.ts), so a 402 anywhere and get_topup_link name the same page.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import { StoreWriteError } from '../../../src/service/core/store.js';
import { TOP_UP_PAGE_PATH, topUpUrl } from '../../../src/service/contract/settings.js';
import { problemOf } from '../../../src/service/http/respond.js';
import { faultProblem } from '../../../src/service/testing/fault-answer.js';
import { call, connect, start } from '../assistant/fixtures.js';

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

/** What `fn` throws. */
function thrownBy(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error('nothing was thrown');
}

describe('the /mcp refusals are problemOf\'s (issue 31 item 1)', () => {
  it('a 402 at /mcp is the body problemOf makes of the floor\'s error, instance /mcp', async () => {
    const svc = await start();
    const poor = await svc.accounts.create({ balance: 9 });
    const res = await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${poor.api_key}` }, body: LIST });
    const body = (await res.json()) as Record<string, unknown>;
    const account = svc.service.accounts.get(poor.id)!;
    const error = thrownBy(() => svc.service.gate.floor(account));
    expect(body).toEqual({ ...problemOf(error, { origin: svc.origin, instance: '/mcp' }), trace_id: body.trace_id });
    expect(res.status).toBe(402);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('a 401 at /mcp is problemOf\'s body, with the challenge that points to the sign-in', async () => {
    const svc = await start();
    const res = await fetch(`${svc.origin}/mcp?x=1`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer sk_test_nobody' }, body: LIST });
    const body = (await res.json()) as { detail: string; trace_id: string };
    expect(body).toEqual({ ...problemOf(new ServiceError('invalid_api_key', body.detail), { origin: svc.origin, instance: '/mcp' }), trace_id: body.trace_id });
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="cliphook", error="invalid_token", resource_metadata=/);
  });
});

describe('one mapping of what an admission step throws, on /v1 and /mcp (issue 31 item 1)', () => {
  it('a failed write while a request is let in is 503 upstream_busy with Retry-After on both, warned, never a 500', async () => {
    const warnings: string[] = [];
    const svc = await start({ warn: (message) => warnings.push(message) });
    svc.service.gate.admit = () => {
      throw new StoreWriteError(new Error('disk full'));
    };
    const v1 = await fetch(`${svc.url}/videos`, { headers: { authorization: `Bearer ${svc.apiKey}` } });
    const mcp = await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${svc.apiKey}` }, body: LIST });
    for (const res of [v1, mcp]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toMatchObject({ code: 'upstream_busy', retry_after: 5 });
    }
    expect(warnings.filter((message) => /a change was not saved/.test(message))).toHaveLength(2);
  });
});

describe('the top-up page is named once (issue 31 item 1)', () => {
  it('a real 402, a fault rule\'s 402 (on /v1 and as faultProblem builds it), a 402 at /mcp and get_topup_link name the same page', async () => {
    const svc = await start();
    const page = topUpUrl(svc.origin);
    expect(page).toBe(`${svc.origin}${TOP_UP_PAGE_PATH}`);
    const poor = await svc.accounts.create({ balance: 9 });
    const real = await (await fetch(`${svc.url}/videos`, { headers: { authorization: `Bearer ${poor.api_key}` } })).json();
    await svc.faults.add({ match: { operation: 'listVideos' }, times: 1, action: { problem: 'insufficient_credits' } });
    const faulted = await (await fetch(`${svc.url}/videos`, { headers: { authorization: `Bearer ${svc.apiKey}` } })).json();
    const built = faultProblem('insufficient_credits', { ruleId: 'flt_1', instance: '/v1/videos', origin: svc.origin }).body;
    const mcp = await (await fetch(`${svc.origin}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${poor.api_key}` }, body: LIST })).json();
    const link = await call(await connect(svc), 'get_topup_link');
    expect([real, faulted, built, mcp].map((body) => body.user_action)).toEqual(Array(4).fill({ kind: 'top_up', url: page }));
    expect(link.data.url).toBe(page);
    // The page itself answers there.
    expect((await fetch(page)).status).toBe(200);
  });

  it('faultProblem is problemOf of the error the fault step throws, for every code it is asked', () => {
    const context = { ruleId: 'flt_9', instance: '/v1/videos', origin: 'http://127.0.0.1:8080', balance: 3 };
    for (const code of ['insufficient_credits', 'upstream_busy', 'invalid_api_key', 'moderation_pending', 'not_found'] as const) {
      const { body, status } = faultProblem(code, context);
      expect(status).toBe(body.status);
      expect(body).toEqual({ ...problemOf(new ServiceError(code, body.detail, extraOf(body)), context), trace_id: body.trace_id });
    }
  });

  it('no module of the service writes the top-up page\'s path but contract/settings.ts', () => {
    const root = join(import.meta.dirname, '../../../src/service');
    const copies = tsFiles(root).filter((file) => /['"`}]\/settings\/top-up/.test(readFileSync(file, 'utf8'))).map((file) => relative(root, file));
    expect(copies).toEqual(['contract/settings.ts']);
  });
});

/** The options a problem body was built with (its extra members, its retry_after). */
function extraOf(body: Record<string, unknown>): { extra?: Record<string, unknown>; retryAfter?: number } {
  const members = new Set(['type', 'title', 'status', 'detail', 'instance', 'code', 'error', 'retryable', 'retry_after', 'user_action', 'trace_id']);
  const extra = Object.fromEntries(Object.entries(body).filter(([name]) => !members.has(name)));
  return { ...(Object.keys(extra).length > 0 ? { extra } : {}), ...(typeof body.retry_after === 'number' ? { retryAfter: body.retry_after } : {}) };
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? tsFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []));
}
