import type { CallToolResult, McpServer, StandardSchemaWithJSON, ToolAnnotations } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import type { AssistantTool } from '../contract/assistant.js';
import { parseOrThrow } from '../contract/problems.js';
import type { Caller } from '../core/gate.js';
import { named, type ControlledRun, type Outcome, type Step } from '../runner/chain.js';
import { failureOf } from '../runner/failure.js';
import { refusalOf, userActionOf, type ToolAnswer } from './answers.js';
import type { Site } from '../core/site.js';
import type { ToolParts } from './parts.js';
import type { AssistantSpending } from './spending.js';

// An assistant's tool call runs on the runner's chain, named for its tool, so the request journal and the
// fault rules see it as they see a route of /v1. The credential, the 60 a minute and the floor ran for the
// HTTP request that carries it (endpoint.ts). The tools are defined once, at start; a request's MCP server
// only puts each on the chain for its caller (`serveTools`).

/** What a tool call reads: the service's parts, the spending rules, and who is calling. */
export interface ToolContext {
  parts: ToolParts;
  spending: AssistantSpending;
  caller: Caller;
  /** The assistant the limits are counted for: for the bearer API key, the key's connection. */
  assistant: string;
}

/** A tool's configuration as the SDK takes it: every tool of `/mcp` has both schemas. */
export interface ToolConfig {
  title: string;
  description: string;
  inputSchema: StandardSchemaWithJSON;
  outputSchema: StandardSchemaWithJSON;
  annotations: ToolAnnotations;
}

/** One tool of `/mcp`, defined once: its name, its configuration, and what a call does. */
export interface ToolDefinition {
  readonly name: AssistantTool;
  readonly config: ToolConfig;
  /** A call: its context, its arguments as the SDK handed them, and the SDK's request context (its abort signal). */
  readonly run: (ctx: ToolContext, args: any, extra: unknown) => CallToolResult | Promise<CallToolResult>;
}

/** A tool's definition, its schemas' JSON Schema made once (`onceJson`). */
export const tool = <A = unknown>(name: AssistantTool, config: ToolConfig, run: (ctx: ToolContext, args: A, extra: unknown) => CallToolResult | Promise<CallToolResult>): ToolDefinition => ({
  name,
  config: { ...config, inputSchema: onceJson(config.inputSchema), outputSchema: onceJson(config.outputSchema) },
  run,
});

/**
 * `schema` with its JSON Schema made on first use and kept: the SDK converts a tool's
 * schemas on each server it is registered on (its `tools/list`, and the called tool's input on every
 * `tools/call`), and a server serves one request. Validation is the schema's own.
 */
export function onceJson(schema: StandardSchemaWithJSON): StandardSchemaWithJSON {
  const standard = schema['~standard'];
  const made = new Map<string, Record<string, unknown>>();
  const once = (io: 'input' | 'output') => (options: { target: string }) => {
    const key = `${io} ${options.target}`;
    let json = made.get(key);
    if (!json) made.set(key, (json = standard.jsonSchema[io](options as never)));
    return json;
  };
  return { '~standard': { ...standard, jsonSchema: { input: once('input'), output: once('output') } } } as StandardSchemaWithJSON;
}

/** The HTTP request under a tool call: how a fault rule's cut or hang reaches its connection. */
export interface ToolTransport {
  /** Calls `listener` once the client is gone; returns what unsubscribes it. */
  onClose(listener: () => void): () => void;
  /** Ends the connection without an answer. */
  drop(): void;
}

/** One tool call's run. */
export interface ToolRun extends ControlledRun<Caller> {
  /** The tool's arguments and the SDK's request context. */
  readonly args: unknown;
  readonly extra: unknown;
  readonly tool: ToolDefinition;
  readonly context: ToolContext;
  readonly transport: ToolTransport;
  /** The tool's answer. */
  result: CallToolResult | null;
}

/** What the answer step needs: where failures are told. */
export interface ToolAnswerParts {
  warn(message: string): void;
  report(error: Error): void;
  /** The service's origin: a 402's top-up link. */
  site: Site;
}

/**
 * The answer of a tool call: the tool's result, or a refusal the assistant can read of what it threw (a
 * `ServiceError`, a fault rule's problem, a failed write as 503 upstream_busy, told to `warn`; anything else
 * 500, told to `report`); a fault rule's cut or hang ends or holds the connection. The one
 * place a tool's error becomes its refusal (the tools do not catch).
 */
export function toolAnswer(parts: ToolAnswerParts): Step<ToolRun> {
  return named('answer', async (run, next) => {
    const { exchange } = run;
    try {
      await next();
    } catch (error) {
      run.result = toToolResult(refusalOf(failureOf(error, parts), parts.site.origin));
    }
    let outcome: Outcome | null = run.outcome;
    if (run.cutAfter) outcome = { kind: 'drop' };
    if (outcome?.kind === 'drop') run.transport.drop();
    if (outcome?.kind === 'hang') await new Promise<void>((resolve) => run.transport.onClose(resolve));
    if (outcome) {
      exchange.dropped = true;
      // Nobody reads it: the connection is gone.
      run.result ??= { isError: true, content: [{ type: 'text', text: '{"error":"dropped"}' }] };
      return;
    }
    const result = run.result!;
    exchange.code = result.isError ? codeOf(result) : null;
    exchange.replayed = (result.structuredContent as { replayed?: unknown } | undefined)?.replayed === true;
  });
}

/** The tool's own work (its parse, its spending rules, its command). */
export const toolCommand: Step<ToolRun> = named('command', async (run, next) => {
  run.result = await run.tool.run(run.context, run.args, run.extra);
  return next();
});

/** The refusal code of a tool's error result (`{"error": code, …}` as its text). */
function codeOf(result: CallToolResult): string | null {
  const text = result.content.find((block) => block.type === 'text') as { text?: string } | undefined;
  try {
    const parsed = JSON.parse(text?.text ?? '') as { error?: unknown };
    return typeof parsed.error === 'string' ? parsed.error : null;
  } catch {
    return null;
  }
}

/**
 * Puts each tool on `server` for one request, every call on `chain` with `context`: journalled as
 * `POST /mcp` with the tool's name as operation and its arguments as body.
 */
export function serveTools(server: McpServer, tools: readonly ToolDefinition[], chain: (run: ToolRun) => Promise<void>, context: ToolContext, transport: ToolTransport): McpServer {
  const { caller } = context;
  for (const definition of tools) {
    server.registerTool(definition.name, definition.config, (async (args: unknown, extra: unknown) => {
      const key = (args as { idempotency_key?: unknown } | undefined)?.idempotency_key;
      const run: ToolRun = {
        operation: definition.name,
        request: { method: 'POST', path: '/mcp', query: {}, onClose: transport.onClose, status: () => 200 },
        exchange: { caller, idempotencyKey: typeof key === 'string' ? key : null, replayed: false, body: args, code: null, dropped: false, admin: false },
        caller,
        cutAfter: false,
        outcome: null,
        args,
        extra,
        tool: definition,
        context,
        transport,
        result: null,
      };
      await chain(run);
      return run.result!;
    }) as never);
  }
  return server;
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
  // Zod's fast path for valid arguments; the contract's mapping (parseOrThrow), slower, only for a refusal.
  const valid = schema.safeParse(args ?? {});
  return valid.success ? valid.data : parseOrThrow(schema, args ?? {});
}

/** A tool's value (a command's view) as its result. */
export const valueResult = (value: unknown): CallToolResult => toToolResult({ ok: true, value: value as Record<string, unknown> });

/**
 * A tool answer as MCP's tool result: a value is `structuredContent` (and the same JSON as text, for
 * clients without structured output); a refusal is `isError: true` with a sentence the assistant can act on.
 */
export function toToolResult(answer: ToolAnswer): CallToolResult {
  if (answer.ok) return { content: [{ type: 'text', text: JSON.stringify(answer.value) }], structuredContent: answer.value };
  // `user_action` as on `/v1`'s problem (spec 7): what the person can do, with the top-up page's link for a 402.
  const action = userActionOf(answer.code);
  const text = JSON.stringify({
    error: answer.code,
    message: answer.message,
    ...(answer.retryAfter === undefined ? {} : { retry_after: answer.retryAfter }),
    ...(action ? { user_action: { kind: action, url: answer.userActionUrl ?? null } } : {}),
    ...(answer.details ? { details: answer.details } : {}),
  });
  return { isError: true, content: [{ type: 'text', text }] };
}
