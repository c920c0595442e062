import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { contractClient, ServiceUnreachableError, type CallAnswer } from '../../../src/service/contract/client.js';
import { SimulatedClock, startService, type StartedService } from '../../../src/service/index.js';

// Issue 31 item 4: the client `cliphook service …` uses, typed from the route table.

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** A fetch that records what it is asked and answers `status` with `answer`. */
function recorder(status = 200, answer: unknown = { ok: 1 }) {
  const sent: Sent[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url, method: String(init.method), headers: init.headers as Record<string, string>, body: init.body as string | undefined });
    return new Response(JSON.stringify(answer), { status, headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  return { sent, fetch };
}

describe('contractClient', () => {
  it('sends an operation to its route: method, path with encoded parameters, query without absent members, JSON body, bearer', async () => {
    const { sent, fetch } = recorder();
    const seen: string[] = [];
    const client = contractClient({ origin: 'http://127.0.0.1:9/', fetch, token: (route) => (seen.push(route.auth), `tok_${route.auth}`) });
    await client.call('rotateSecret', { params: { id: 'key_a/b' } });
    await client.call('listRequests', { query: { operation: 'getAccount', limit: '5', method: undefined } });
    await client.call('topUp', { body: { credits: 100 } });
    await client.call('deleteTestAccount', { params: { id: 2 } });
    await client.call('getPricing');
    expect(sent.map(({ method, url }) => `${method} ${url}`)).toEqual([
      'POST http://127.0.0.1:9/settings/keys/key_a%2Fb/rotate-secret',
      'GET http://127.0.0.1:9/test_helpers/requests?operation=getAccount&limit=5',
      'POST http://127.0.0.1:9/settings/top-up',
      'DELETE http://127.0.0.1:9/test_helpers/accounts/2',
      'GET http://127.0.0.1:9/v1/pricing',
    ]);
    expect(sent[2]).toMatchObject({ headers: { authorization: 'Bearer tok_settings', 'content-type': 'application/json' }, body: '{"credits":100}' });
    expect(sent[0]!.headers).toEqual({ authorization: 'Bearer tok_settings' });
    // GET /v1/pricing takes no key: none is asked for, none is sent.
    expect(sent[4]!.headers).toEqual({});
    expect(seen).toEqual(['settings', 'admin_or_key', 'settings', 'admin']);
  });

  it('answers the 2xx body, or the problem with its status; a failed fetch is ServiceUnreachableError with the cause', async () => {
    const ok = await contractClient({ origin: 'http://127.0.0.1:9', fetch: recorder(200, { balance: 7, topped_up: true, credits_added: 2 }).fetch }).call('topUp', { body: { credits: 2 } });
    expect(ok).toEqual({ ok: true, status: 200, body: { balance: 7, topped_up: true, credits_added: 2 } });
    const refused = await contractClient({ origin: 'http://127.0.0.1:9', fetch: recorder(402, { code: 'insufficient_credits', detail: 'Too few.' }).fetch }).call('createKey');
    expect(refused).toMatchObject({ ok: false, status: 402, problem: { code: 'insufficient_credits', detail: 'Too few.' } });
    const cause = new TypeError('fetch failed');
    const failing = contractClient({ origin: 'http://127.0.0.1:9', fetch: (async () => Promise.reject(cause)) as typeof fetch });
    const error = await failing.call('listKeys').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ServiceUnreachableError);
    expect(error).toMatchObject({ code: 'service_unreachable', origin: 'http://127.0.0.1:9', cause });
  });

  it('refuses a bad origin or token at construction, naming the option', () => {
    expect(() => contractClient({ origin: 'not a url' })).toThrow(/^Expected `origin` to be an absolute URL, got "not a url"\.$/);
    expect(() => contractClient({ origin: 'http://x', token: 'sk_1' as never })).toThrow(/`token`/);
  });

  it('is typed by the route table: operations, inputs and answers', () => {
    const client = contractClient({ origin: 'http://127.0.0.1:9', fetch: recorder().fetch });
    expectTypeOf(client.call<'topUp'>).returns.resolves.toEqualTypeOf<CallAnswer<'topUp'>>();
    type TopUpBody = Extract<CallAnswer<'topUp'>, { ok: true }>['body'];
    expectTypeOf<TopUpBody>().toEqualTypeOf<{ balance: number; topped_up: true; credits_added: number } | null>();
    const typeChecks = () => {
      // @ts-expect-error no such operation
      void client.call('topUpEverything');
      // @ts-expect-error top-up takes a body
      void client.call('topUp');
      // @ts-expect-error credits is a number
      void client.call('topUp', { body: { credits: 'many' } });
      // @ts-expect-error rotate-secret needs the key id in its path
      void client.call('rotateSecret', {});
    };
    expect(typeof typeChecks).toBe('function');
  });

  it('talks to a running service: the answers are what the routes say', async () => {
    service = await startService({ clock: new SimulatedClock({ frozen: true }) });
    const running = service;
    const client = contractClient({ origin: running.origin, token: (route) => (route.auth === 'admin' ? running.adminToken : running.apiKey) });
    expect(await client.call('listKeys')).toMatchObject({ ok: true, status: 200, body: { data: [{ id: expect.stringMatching(/^key_/) }] } });
    expect(await client.call('advanceClock', { body: { seconds: 1 } })).toMatchObject({ ok: true, status: 200, body: { advanced_seconds: 1 } });
    expect(await client.call('listTestAccounts')).toMatchObject({ ok: true, body: { data: [{ id: 1 }] } });
    expect(await client.call('revokeKey', { params: { id: 'key_none' } })).toMatchObject({ ok: false, status: 404, problem: { code: 'not_found' } });
  });
});

let service: StartedService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});
