import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import type { Caller } from '../core/gate.js';
import { compose, named, type Outcome, type Step } from '../runner/chain.js';
import { failureOf } from '../runner/failure.js';
import type { ControlledRun } from '../testing/steps.js';
import { refusalOf } from './answers.js';
import { toToolResult } from './context.js';

// Issue 31 item 2: an assistant's tool call runs on the runner's chain, named for its tool, so the request
// journal and the fault rules see it as they see a route of /v1. The credential, the 60 a minute and the
// floor were checked for the HTTP request that carries it (endpoint.ts).

/** The HTTP request under a tool call: how a fault rule's cut or hang reaches its connection. */
export interface ToolTransport {
  /** Calls `listener` once the client is gone; returns what unsubscribes it. */
  onClose(listener: () => void): () => void;
  /** Ends the connection without an answer. */
  drop(): void;
}

type ToolHandler = (...params: any[]) => CallToolResult | Promise<CallToolResult>;

/** One tool call's run. */
export interface ToolRun extends ControlledRun {
  /** What the SDK handed the tool: its arguments (when it takes some) and the request's context. */
  readonly params: unknown[];
  readonly handler: ToolHandler;
  readonly transport: ToolTransport;
  /** The tool's answer. */
  result: CallToolResult | null;
}

/** What the answer step needs: where failures are told. */
export interface ToolAnswerParts {
  warn(message: string): void;
  report(error: Error): void;
}

/**
 * The answer of a tool call: the tool's result, or a refusal the assistant can read (a fault rule's
 * problem, a failed write as 503 upstream_busy); a fault rule's cut or hang ends or holds the connection.
 */
export function toolAnswer(parts: ToolAnswerParts): Step<ToolRun> {
  return named('answer', async (run, next) => {
    const { exchange } = run;
    try {
      await next();
    } catch (error) {
      run.result = toToolResult(refusalOf(failureOf(error, parts)));
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
  run.result = await run.handler(...run.params);
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
 * `server` as the tool modules see it, whose `registerTool` puts each tool on the chain of `steps` for
 * `caller`: a call is journalled as `POST /mcp` with the tool's name as operation and its arguments as body.
 */
export function onRunner(server: McpServer, steps: readonly Step<ToolRun>[], caller: Caller, transport: ToolTransport): McpServer {
  const chain = compose(steps);
  const runner = Object.create(server) as McpServer;
  runner.registerTool = ((name: string, config: { inputSchema?: unknown }, handler: ToolHandler) =>
    server.registerTool(name, config as never, (async (...params: unknown[]) => {
      const args = config.inputSchema ? params[0] : undefined;
      const key = (args as { idempotency_key?: unknown } | undefined)?.idempotency_key;
      const run: ToolRun = {
        operation: name,
        request: { method: 'POST', path: '/mcp', query: {}, onClose: transport.onClose, status: () => 200 },
        exchange: { caller, idempotencyKey: typeof key === 'string' ? key : null, replayed: false, body: args, code: null, dropped: false, admin: false },
        caller,
        cutAfter: false,
        outcome: null,
        params,
        handler,
        transport,
        result: null,
      };
      await chain(run);
      return run.result!;
    }) as never)) as McpServer['registerTool'];
  return runner;
}
