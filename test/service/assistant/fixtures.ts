// The assistant tests' set-up: a service on a frozen simulated clock, SDK clients on its /mcp, and a tool
// call read as { isError, data, error }. The service and the clients are closed after each test.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach } from 'vitest';
import { SimulatedClock } from '../../../src/service/core/clock.js';
import { startService, type StartedService } from '../../../src/service/http/app.js';

let svc: StartedService | undefined;
const clients: Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  await svc?.close();
  svc = undefined;
});

export async function start(options: Parameters<typeof startService>[0] = {}): Promise<StartedService> {
  svc = await startService({ clock: new SimulatedClock({ frozen: true }), ...options });
  return svc;
}

export async function connect(started: StartedService, era: 'modern' | 'legacy' = 'modern', apiKey = started.apiKey): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' }, era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
  const transport = new StreamableHTTPClientTransport(new URL(`${started.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

export type Structured = Record<string, unknown>;
export async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Structured; content: Array<{ type: string; text?: string }> };
  const text = result.content.find((block) => block.type === 'text')?.text ?? '';
  return { isError: result.isError === true, data: result.structuredContent ?? {}, error: result.isError ? (JSON.parse(text) as { error: string; message: string }) : null };
}

export const balance = async (started: StartedService) => ((await (await fetch(`${started.url}/account`, { headers: { authorization: `Bearer ${started.apiKey}` } })).json()) as { balance: number }).balance;

/**
 * Resolves once the service's clock holds more timers than `before`: a tool call is waiting on it. Nothing
 * sleeps: each turn lets the request's I/O run (at most 100,000 turns, then it fails).
 */
export async function untilWaiting(started: StartedService, before: number): Promise<void> {
  for (let turn = 0; started.clock.timers <= before; turn++) {
    if (turn > 100_000) throw new Error(`No tool call came to wait on the clock (${started.clock.timers} timers).`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Moves the clock `ms` at a time until the tool call answers (at most ten steps): the call may reach the service
 * after the first step on a loaded machine, so no real time is slept; each step lets the request's I/O run.
 */
export async function advanceWhile<T>(started: StartedService, pending: Promise<T>, ms: number): Promise<T> {
  let settled = false;
  pending.then(() => (settled = true), () => (settled = true));
  for (let step = 0; step < 10 && !settled; step++) {
    await started.clock.advance(ms);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return pending;
}
