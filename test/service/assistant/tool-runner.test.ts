import { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { ACCOUNT_TOOLS } from '../../../src/service/assistant/account-tools.js';
import { CLIP_TOOLS } from '../../../src/service/assistant/clip-tools.js';
import { PHOTO_TOOLS } from '../../../src/service/assistant/photo-tools.js';
import { onceJson, serveTools, type ToolContext, type ToolRun } from '../../../src/service/assistant/tool-runner.js';
import { ASSISTANT_TOOL_NAMES } from '../../../src/service/contract/assistant.js';

// Issue 31 item 6: the SDK serves one request per McpServer (it refuses an instance still serving and keeps the
// request's protocol version and client on it), so each request has a server; the tools are defined once, and
// their JSON Schemas made once, so a request's server only puts them on the chain.

describe('tools defined once, served per request (issue 31 item 6)', () => {
  it('defines each of the 13 tools of the contract once', () => {
    expect([...CLIP_TOOLS, ...ACCOUNT_TOOLS, ...PHOTO_TOOLS].map((tool) => tool.name).sort()).toEqual([...ASSISTANT_TOOL_NAMES].sort());
  });

  it('makes a schema\'s JSON Schema on first use only, and keeps its validation', async () => {
    const schema = z.object({ n: z.int() });
    let made = 0;
    const standard = schema['~standard'] as unknown as { jsonSchema: { input(options: unknown): unknown } };
    const input = standard.jsonSchema.input.bind(standard.jsonSchema);
    const counted = { '~standard': { ...schema['~standard'], jsonSchema: { ...standard.jsonSchema, input: (options: unknown) => (made++, input(options)) } } };
    const once = onceJson(counted as never);
    const first = once['~standard'].jsonSchema.input({ target: 'draft-2020-12' });
    expect(once['~standard'].jsonSchema.input({ target: 'draft-2020-12' })).toBe(first);
    expect(made).toBe(1);
    expect(first).toMatchObject({ type: 'object', properties: { n: { type: 'integer' } } });
    expect((await once['~standard'].validate({ n: 'x' })).issues).toBeDefined();
  });

  it('puts every tool on two servers from the same definitions, each call on the chain with its own context', async () => {
    const runs: ToolRun[] = [];
    const chain = async (run: ToolRun) => {
      runs.push(run);
      run.result = { content: [{ type: 'text', text: 'ok' }] };
    };
    const transport = { onClose: () => () => undefined, drop: () => undefined };
    const contexts = [1, 2].map((id) => ({ assistant: `asst_${id}`, caller: { account: { id } } }) as unknown as ToolContext);
    const servers = contexts.map((context) => serveTools(new McpServer({ name: 't', version: '1' }), CLIP_TOOLS, chain, context, transport));
    const registered = servers.map((server) => (server as unknown as { _registeredTools: Record<string, { handler: (args: unknown, extra: unknown) => Promise<unknown> }> })._registeredTools);
    expect(Object.keys(registered[0]!)).toEqual(CLIP_TOOLS.map((tool) => tool.name));
    await registered[1]!.create_clip!.handler({ prompt: 'a fox', idempotency_key: 'k1' }, {});
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ operation: 'create_clip', context: contexts[1], args: { prompt: 'a fox' }, exchange: { idempotencyKey: 'k1', body: { prompt: 'a fox' } } });
    expect(runs[0]!.tool).toBe(CLIP_TOOLS.find((tool) => tool.name === 'create_clip'));
  });
});
