import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Result } from '../result.js';
import type { Caller, Service } from '../service.js';
import type { AssistantSpending, ToolAnswer } from './spending.js';

/** What every tool of one request reads: the service, the spending rules, and who is calling. */
export interface ToolContext {
  service: Service;
  spending: AssistantSpending;
  caller: Caller;
  /** The assistant the limits are counted for: for the bearer API key, the key. */
  assistant: string;
}

/** An operation's `Result` as a tool answer: its body, or its problem as a refusal. */
export function fromResult(result: Result): ToolAnswer {
  const body = result.body as Record<string, unknown>;
  if (result.status >= 200 && result.status < 300) return { ok: true, value: body };
  const { code, detail, title, ...rest } = body as { code?: string; detail?: string; title?: string } & Record<string, unknown>;
  const details = Object.fromEntries(Object.entries(rest).filter(([name]) => !['type', 'status', 'instance', 'error'].includes(name)));
  return { ok: false, code: code ?? 'error', message: detail ?? title ?? 'The request was refused.', details };
}

/**
 * A tool answer as MCP's tool result: a value is `structuredContent` (and the same JSON as text, for
 * clients without structured output); a refusal is `isError: true` with a sentence the assistant can act on.
 */
export function toToolResult(answer: ToolAnswer): CallToolResult {
  if (answer.ok) return { content: [{ type: 'text', text: JSON.stringify(answer.value) }], structuredContent: answer.value };
  const text = JSON.stringify({ error: answer.code, message: answer.message, ...(answer.details ? { details: answer.details } : {}) });
  return { isError: true, content: [{ type: 'text', text }] };
}
