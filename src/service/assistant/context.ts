import type { CallToolResult, StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { parseOrThrow, ServiceError } from '../contract/problems.js';
import { StoreWriteError } from '../core/store.js';
import { failureOf } from '../runner/failure.js';
import type { Caller } from '../core/gate.js';
import type { Service } from '../service.js';
import { refusalOf, type ToolAnswer } from './answers.js';
import type { AssistantSpending } from './spending.js';

/** What every tool of one request reads: the service, the spending rules, and who is calling. */
export interface ToolContext {
  service: Service;
  spending: AssistantSpending;
  caller: Caller;
  /** The assistant the limits are counted for: for the bearer API key, the key. */
  assistant: string;
}

/**
 * Runs a tool's work on the service's commands: their answer as the tool's value, and a `ServiceError`
 * (the spec's code, the same as on `/v1`) as a refusal the assistant can read.
 */
export async function attempt(run: () => unknown): Promise<ToolAnswer> {
  return attemptAnswer(async () => ({ ok: true, value: (await run()) as Record<string, unknown> }));
}

/** Runs a tool's work that answers for itself (a value or its own refusal), a `ServiceError` as a refusal. */
export async function attemptAnswer(run: () => Promise<ToolAnswer> | ToolAnswer): Promise<ToolAnswer> {
  try {
    return await run();
  } catch (error) {
    // Issue 20 item 9: what the call changed was taken back whole (the runner's one mapping, issue 31 item 1).
    if (error instanceof ServiceError || error instanceof StoreWriteError) return refusalOf(failureOf(error, { warn: () => undefined, report: () => undefined }));
    throw error;
  }
}

/**
 * A tool's input schema from the contract: its JSON Schema is the zod schema's (so a tool shows the same
 * bounds, enums and descriptions as `/v1`), but the SDK lets every input through, and the tool parses it
 * itself with `parseInput`, so a bad argument is refused with the contract's code and sentence, as on `/v1`,
 * not with the SDK's generic "Input validation error".
 */
export function contractInput<T extends z.ZodObject>(schema: T): StandardSchemaWithJSON<z.input<T>, unknown> {
  const standard = schema['~standard'] as unknown as { jsonSchema: StandardSchemaWithJSON['~standard']['jsonSchema'] };
  return {
    '~standard': {
      version: 1,
      vendor: 'cliphook',
      validate: (value: unknown) => ({ value }),
      jsonSchema: standard.jsonSchema,
    },
  } as unknown as StandardSchemaWithJSON<z.input<T>, unknown>;
}

/** Parses a tool's arguments with the contract's schema, or throws its refusal. */
export function parseInput<T extends z.ZodType>(schema: T, args: unknown): z.output<T> {
  return parseOrThrow(schema, args ?? {});
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
