// Issue 31 item 1: a request to /mcp is let in by the runner's steps: the gate of /v1 looks the API key up
// (an OAuth token only when it names no key), and /v1's own `limits` and `floor` steps count it and hold the
// balance floor, for every message but those that cost nothing.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../../src/service/contract/problems.js';
import type { Identified } from '../../../src/service/core/gate.js';
import { body, mcpFloor, mcpLimits, originRule, signIn, type McpRun } from '../../../src/service/assistant/endpoint.js';
import type { AssistantRow } from '../../../src/service/assistant/connections.js';
import { callerWith } from '../runner/fixtures.js';
import { start } from './fixtures.js';

const who: Identified = { ...callerWith(100), limitName: 'key_1' };
const row = { id: 'asst_1', disconnectedAt: null } as AssistantRow;

/** A request to /mcp as the steps see it. */
function mcpRun(headers: Record<string, string>, { method = 'POST', payload }: { method?: string; payload?: string } = {}): McpRun {
  const req = Object.assign(Readable.from(payload === undefined ? [] : [Buffer.from(payload)]), { method, headers, socket: { remoteAddress: '127.0.0.1' } }) as unknown as IncomingMessage;
  return { req, origin: 'http://127.0.0.1:4010', route: { auth: 'key' }, headers: {}, exchange: { caller: null }, body: undefined, counted: true } as Omit<McpRun, 'caller'> as McpRun;
}

const next = async () => undefined;

describe('the admission steps of /mcp (issue 31 item 1)', () => {
  it('identifies an API key with the gate of /v1 and asks the OAuth side nothing', async () => {
    const asked: string[] = [];
    const step = signIn({
      gate: { lookup: (authorization: string | undefined) => (asked.push(`lookup ${authorization}`), who) } as never,
      connections: { forKey: () => row },
      byToken: async () => { throw new Error('not asked'); },
    });
    const run = mcpRun({ authorization: 'Bearer sk_test' });
    await step(run, next);
    expect(asked).toEqual(['lookup Bearer sk_test']);
    expect(run.who).toMatchObject({ limitName: 'key_1', assistant: row });
    expect(run.caller).not.toHaveProperty('limitName');
  });

  it('asks the OAuth side only for a bearer token that names no key, and refuses a malformed header or a disconnected key', async () => {
    const byToken = async (authorization: string | undefined, address: string | undefined): Promise<Identified> => ({ ...who, limitName: `token ${authorization} from ${address}` });
    const token = mcpRun({ authorization: 'Bearer at_1' });
    await signIn({ gate: { lookup: () => 'invalid_api_key' } as never, connections: { forKey: () => row }, byToken })(token, next);
    expect(token.who?.limitName).toBe('token Bearer at_1 from 127.0.0.1');
    await expect(signIn({ gate: { lookup: () => 'invalid_auth_header' } as never, connections: { forKey: () => row }, byToken })(mcpRun({}), next)).rejects.toMatchObject({ code: 'invalid_auth_header' });
    const gone = { ...row, disconnectedAt: 1 } as AssistantRow;
    await expect(signIn({ gate: { lookup: () => who } as never, connections: { forKey: () => gone }, byToken })(mcpRun({ authorization: 'Bearer sk_test' }), next)).rejects.toMatchObject({ code: 'invalid_api_key' });
  });

  it('counts a message with /v1\'s limits step (its headers; 429 carrying them) and holds /v1\'s floor; notifications/initialized and GET are not counted', async () => {
    const admitted: string[] = [];
    const decision = (allowed: boolean) => ({ allowed, limit: 60, remaining: allowed ? 59 : 0, reset: 60, retryAfter: allowed ? 0 : 12 });
    const gate = (allowed: boolean) => ({ admit: async (w: Identified) => (admitted.push(w.limitName), { caller: callerWith(w.account.balance), decision: decision(allowed) }) });
    const counted = mcpRun({}, { payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    counted.who = who;
    await body(counted, next);
    expect(counted.counted).toBe(true);
    await mcpLimits(gate(true))(counted, next);
    expect(counted.headers['x-ratelimit-remaining']).toBe('59');
    const full: McpRun = { ...counted, headers: {} };
    await expect(mcpLimits(gate(false))(full, next)).rejects.toMatchObject({ code: 'rate_limit_exceeded', retryAfter: 12 });
    expect(full.headers['x-ratelimit-remaining']).toBe('0');
    const poor = { ...counted, caller: callerWith(9) };
    await expect(mcpFloor({ floor: () => { throw new ServiceError('insufficient_credits', 'low'); } })(poor, next)).rejects.toMatchObject({ code: 'insufficient_credits' });
    const initialized = mcpRun({}, { payload: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    await body(initialized, next);
    const get = mcpRun({}, { method: 'GET' });
    await body(get, next);
    for (const run of [initialized, get]) {
      expect(run.counted).toBe(false);
      run.who = who;
      await mcpLimits(gate(true))(run, next);
      await mcpFloor({ floor: () => { throw new Error('not held'); } })(run, next);
    }
    expect(admitted).toEqual(['key_1', 'key_1']);
  });

  it('refuses a foreign Host or Origin before anything else, and takes its own and loopback names', async () => {
    await expect(originRule(mcpRun({ host: 'evil.example' }), next)).rejects.toMatchObject({ code: 'host_not_allowed' });
    await expect(originRule(mcpRun({ host: '127.0.0.1:4010', origin: 'http://evil.example' }), next)).rejects.toMatchObject({ code: 'origin_not_allowed' });
    await originRule(mcpRun({ host: '127.0.0.1:4010', origin: 'http://localhost:3000' }), next);
  });
});

describe('the balance floor at /mcp', () => {
  it('answers 402 insufficient_credits over HTTP with the top-up link and the rate window, as /v1 does', async () => {
    const svc = await start();
    const poor = await svc.accounts.create({ balance: 9 });
    const res = await fetch(`${svc.origin}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${poor.api_key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(402);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('59');
    const problem = (await res.json()) as { code: string; required: number; balance: number; user_action: { url: string } };
    expect(problem).toMatchObject({ code: 'insufficient_credits', balance: 9, required: 10, user_action: { url: `${svc.origin}/settings/top-up` } });
  });
});
