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
