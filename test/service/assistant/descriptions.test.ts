import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { connect, start } from './fixtures.js';

// Issue 31 item 4: the tool descriptions and the instructions are made from contract/ (prices, limits, waits,
// the version), and read the same as before: MCP clients show them to the model. The text is pinned here.
const FIXTURE = new URL('./__fixtures__/tool-texts.json', import.meta.url);

describe('the texts an assistant reads (issue 31 item 4)', () => {
  it('lists every tool with its description and input schema, the effects, the server instructions and version, as pinned', async () => {
    const client = await connect(await start());
    const { tools } = await client.listTools();
    const texts = {
      server: client.getServerVersion(),
      instructions: client.getInstructions(),
      effects: (await client.callTool({ name: 'list_effects', arguments: {} })).structuredContent,
      tools: Object.fromEntries(tools.map((tool) => [tool.name, { description: tool.description, inputSchema: tool.inputSchema }])),
    };
    if (process.env.PIN_TOOL_TEXTS) writeFileSync(FIXTURE, `${JSON.stringify(texts, null, 2)}\n`);
    expect(texts).toEqual(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  });
});
