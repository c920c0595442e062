import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { unanswered as routeUnanswered } from '../../../src/service/http/pipeline.js';
import { PageRequest, unanswered } from '../../../src/service/pages/run.js';
import { ServiceError } from '../../../src/service/contract/problems.js';
import type { Outcome } from '../../../src/service/runner/chain.js';

// Issue 31 item 1: a page's request as the runner's steps read it, and what a page does with no answer.

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server whose one request is handed to `handle`; resolves with what the client got (or `null` when the connection ended). */
async function exchange(handle: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>, path = '/settings/top-up/form', signal?: AbortSignal): Promise<{ status: number } | null> {
  const server = createServer((req, res) => void handle(req, res));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: 'x=1', signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(2_000)]) : AbortSignal.timeout(2_000) }).then((res) => ({ status: res.status }), () => null);
}

describe('PageRequest', () => {
  it('carries the form’s credential and body, the page’s method and path (or the one given), and the client’s address', async () => {
    let seen: PageRequest | undefined;
    let json: unknown;
    await exchange(async (req, res) => {
      seen = new PageRequest(req, res, 'Bearer sk_form', { credits: 5 });
      json = await seen.json();
      expect(seen.answered()).toBe(false);
      res.writeHead(201).end();
    }, '/settings/top-up/form?x=1');
    expect(seen).toMatchObject({ method: 'POST', path: '/settings/top-up/form', authorization: 'Bearer sk_form', address: '127.0.0.1', idempotencyKey: undefined, params: {}, query: {} });
    expect(json).toEqual({ ok: true, value: { credits: 5 } });
    expect(seen!.status()).toBe(201);
    expect(seen!.answered()).toBe(true);
    let masked: PageRequest | undefined;
    await exchange((req, res) => {
      masked = new PageRequest(req, res, undefined, undefined, '/photos/upload/{token}');
      res.end();
    }, '/photos/upload/secret-token');
    expect(masked!.path).toBe('/photos/upload/{token}');
  });
});

describe('unanswered', () => {
  it('ends the connection for a cut (drop) and leaves a problem or an answer to the page', async () => {
    const outcomes: Array<Promise<void> | undefined> = [];
    expect(await exchange((req, res) => {
      outcomes.push(unanswered(req, res, { kind: 'json', status: 200, body: {}, headers: {} }));
      outcomes.push(unanswered(req, res, { kind: 'drop' }));
    })).toBeNull();
    expect(outcomes[0]).toBeUndefined();
    await expect(outcomes[1]).resolves.toBeUndefined();
  });
});

describe('unanswered: one function for /v1\'s routes and the pages (issue 31 item 1)', () => {
  it('is the HTTP adapter\'s own, not a copy', () => {
    expect(typeof routeUnanswered).toBe('function');
    expect(unanswered).toBe(routeUnanswered);
  });

  it('ends the connection of an abort, lets an unread body flow away on a drop, and holds a hang until the client goes', async () => {
    const seen: Array<{ kind: string; settled: Promise<void> | undefined; flowing: boolean | null }> = [];
    for (const kind of ['abort', 'drop'] as const) {
      expect(await exchange((req, res) => {
        seen.push({ kind, settled: unanswered(req, res, { kind }), flowing: req.readableFlowing });
      })).toBeNull();
    }
    expect(seen.map(({ kind, flowing }) => [kind, flowing])).toEqual([['abort', null], ['drop', true]]);
    await Promise.all(seen.map(({ settled }) => expect(settled).resolves.toBeUndefined()));
    let held: Promise<void> | undefined;
    let closed = false;
    const client = new AbortController();
    const answer = exchange((req, res) => {
      held = unanswered(req, res, { kind: 'hang' });
      void held!.then(() => (closed = true));
      // Nothing is sent: the client gives up.
      setImmediate(() => client.abort());
    }, '/settings/top-up/form', client.signal);
    expect(await answer).toBeNull();
    await held;
    expect(closed).toBe(true);
    for (const kind of ['problem', 'written'] as const) {
      await exchange((req, res) => {
        const outcome: Outcome = kind === 'problem' ? { kind, body: {} as never, headers: {}, error: new ServiceError('not_found', 'Not found') } : { kind };
        expect(unanswered(req, res, outcome)).toBeUndefined();
        res.end();
      });
    }
  });
});
