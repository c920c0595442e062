// Issue 31 item 2: the assistant under the test controls of /v1 — its tool calls in the request journal
// (operation = the tool, arguments redacted as bodies) and fault rules that name a tool.
import { describe, expect, it } from 'vitest';
import { balance, call, connect, start } from './fixtures.js';

describe('the assistant under the test controls (issue 31 item 2)', () => {
  it('journals each tool call as POST /mcp with the tool as operation, its arguments as body, its idempotency_key and its refusal code', async () => {
    const svc = await start();
    const client = await connect(svc);
    const made = await call(client, 'create_clip', { prompt: 'a fox', duration: 5, max_credits: 10, idempotency_key: 'fox-1' });
    expect(made.isError).toBe(false);
    const again = await call(client, 'create_clip', { prompt: 'a fox', duration: 5, max_credits: 10, idempotency_key: 'fox-1' });
    expect(again.data.replayed).toBe(true);
    const refused = await call(client, 'create_clip', { prompt: 'an owl', duration: 5, max_credits: 1 });
    expect(refused.isError).toBe(true);
    const { data } = await svc.requests.list({ operation: 'create_clip' });
    expect(data.map((entry) => [entry.method, entry.path, entry.status, entry.code, entry.idempotency_key, entry.replayed])).toEqual([
      ['POST', '/mcp', 200, refused.error!.error, null, false],
      ['POST', '/mcp', 200, null, 'fox-1', true],
      ['POST', '/mcp', 200, null, 'fox-1', false],
    ]);
    expect(data[2]!.body).toMatchObject({ prompt: 'a fox', duration: 5, max_credits: 10 });
    expect(data[2]!.account).toBe(1);
  });

  it('redacts a secret in a tool call\'s arguments as it does in a body', async () => {
    const svc = await start();
    const client = await connect(svc);
    await call(client, 'create_clip', { prompt: `a fox ${svc.apiKey}`, duration: 5, max_credits: 10 });
    const { data } = await svc.requests.list({ operation: 'create_clip' });
    expect(JSON.stringify(data[0]!.body)).not.toContain(svc.apiKey);
  });

  it('lets a fault rule name a tool: its call is refused with the code and nothing is charged; a rule on the route does not touch the tool', async () => {
    const svc = await start();
    const client = await connect(svc);
    await svc.faults.add({ match: { operation: 'createVideo' }, action: { problem: 'upstream_busy' } });
    const rule = await svc.faults.add({ match: { operation: 'create_clip' }, times: 1, action: { problem: 'no_session_available' } });
    expect(rule.match.operation).toBe('create_clip');
    const before = await balance(svc);
    const faulted = await call(client, 'create_clip', { prompt: 'a fox', duration: 5, max_credits: 10 });
    expect(faulted.error?.error).toBe('no_session_available');
    expect(await balance(svc)).toBe(before);
    const next = await call(client, 'create_clip', { prompt: 'a fox', duration: 5, max_credits: 10 });
    expect(next.isError).toBe(false);
    const { data } = await svc.requests.list({ operation: 'create_clip' });
    expect(data.map((entry) => entry.code)).toEqual([null, 'no_session_available']);
  });

  it('refuses a rule whose problem the tool\'s operation never answers, and an unknown tool, naming the tools', async () => {
    const svc = await start();
    await expect(svc.faults.add({ match: { operation: 'get_clip' }, action: { problem: 'idempotency_key_reused' } })).rejects.toMatchObject({ code: 'invalid_parameter' });
    const unknown = await fetch(`${svc.origin}/test_helpers/faults`, { method: 'POST', headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ match: { operation: 'make_coffee' }, action: { problem: 'upstream_busy' } }) });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { allowed_values: string[] }).allowed_values).toContain('create_clip');
  });

  it('cuts the connection of a tool call for a rule\'s cut: before, journalled with status 0, nothing made', async () => {
    const svc = await start();
    const client = await connect(svc);
    await svc.faults.add({ match: { operation: 'create_clip' }, times: 1, action: { cut: 'before' } });
    const before = await balance(svc);
    await expect(client.callTool({ name: 'create_clip', arguments: { prompt: 'a fox', duration: 5, max_credits: 10 } })).rejects.toThrow();
    const { data } = await svc.requests.list({ operation: 'create_clip' });
    expect(data[0]).toMatchObject({ status: 0, code: null });
    expect(await balance(svc)).toBe(before);
  });
});

describe('what tools create is under webhook chaos and the account\'s clock (issue 31 item 2)', () => {
  it('a clip of create_clip ends on its account\'s own advance and its webhook gets the account\'s chaos', async () => {
    const { createServer } = await import('node:http');
    const deliveries: string[] = [];
    const receiver = createServer((req, res) => {
      deliveries.push(String(req.headers['x-service-delivery']));
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const svc = await start();
      const client = await connect(svc);
      await svc.webhookChaos({ account: 1, modes: ['webhook_duplicate'] });
      const port = (receiver.address() as { port: number }).port;
      const made = await call(client, 'create_clip', { prompt: 'a fox', duration: 5, max_credits: 10, callback_url: `http://127.0.0.1:${port}/hook` });
      expect(made.isError).toBe(false);
      await svc.clock.advance(10 * 60_000, { account: 1 });
      for (let i = 0; i < 50 && deliveries.length < 2; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(deliveries).toHaveLength(2);
      expect(new Set(deliveries).size).toBe(1);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
