import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { createMcpHandler, McpServer, type McpHttpHandler } from '@modelcontextprotocol/server';
import { isLoopbackHost } from '../../http/loopback.js';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { API_VERSION, LIMITS } from '../contract/limits.js';
import { ServiceError } from '../contract/problems.js';
import type { Caller, Identified } from '../core/gate.js';
import { problemOf } from '../http/respond.js';
import type { Result } from '../http/result.js';
import { failureOf } from '../runner/failure.js';
import { problemHeaders } from '../../protocol/problem.js';
import { compose, named, type Step } from '../runner/chain.js';
import { floor, limits } from '../runner/steps.js';
import { ACCOUNT_TOOLS } from './account-tools.js';
import { CLIP_TOOLS } from './clip-tools.js';
import type { AssistantConnections } from './connections.js';
import type { AssistantControls, AssistantParts, SignInParts } from './parts.js';
import { PHOTO_TOOLS } from './photo-tools.js';
import { AssistantSettings } from './settings.js';
import { AssistantSignIn } from './sign-in.js';
import { AssistantSpending } from './spending.js';
import { serveTools, toolAnswer, toolCommand, type ToolAnswerParts, type ToolContext, type ToolDefinition, type ToolRun, type ToolTransport } from './tool-runner.js';

/** The path of the assistant endpoint and of its status, at the service's origin. */
export const MCP_PATH = '/mcp';
export const MCP_STATUS_PATH = '/mcp/status';

const INSTRUCTIONS =
  "Makes video clips and images on the person's cliphook account. Every spending tool needs max_credits: tell the person the price first " +
  `(list_effects shows prices). The assistant has a daily credit limit (get_account shows what remains) and at most ${LIMITS.assistant.concurrentClips} clips running at once. ` +
  `create_clip returns at once; get_clip waits up to ${LIMITS.assistant.toolWaitSeconds} s for the clip to end. ` +
  "The assistant cannot send photos: start_photo_upload gives a link for the person to upload one, and get_photo says when it is ready for create_clip's photo_ids.";

/** The 13 tools (spec 5.7), defined once, not per request (each request has its own MCP server). */
const TOOLS: readonly ToolDefinition[] = [...CLIP_TOOLS, ...ACCOUNT_TOOLS, ...PHOTO_TOOLS];

// A request to /mcp is let in by steps of the runner, in order: the DNS rebinding rule, who
// the bearer credential names (an API key through the gate of /v1, or an OAuth access token), the body, then
// /v1's own `limits` (60 a minute, 429) and `floor` (402) steps for every message but those that cost nothing.

/** The largest JSON-RPC body the endpoint reads (LIMITS.jsonBodyBytes, as /v1). */
const MAX_MCP_BYTES = LIMITS.jsonBodyBytes;

/** A request to `/mcp` as the admission steps see it. */
export interface McpRun {
  readonly req: IncomingMessage;
  /** The service's origin (the DNS rebinding rule names its host). */
  readonly origin: string;
  /** Every message is a keyed call (the floor's rule). */
  readonly route: { readonly auth: 'key' };
  /** Who the credential names, until the limits admit it. */
  who?: Identified | undefined;
  caller: Caller;
  /** The rate window's headers, which every answer carries once the limits ran. */
  headers: Record<string, string>;
  readonly exchange: { caller: Caller | null };
  /** The body of a POST, read whole. */
  body: Buffer | undefined;
  /** Whether the message counts against the 60 a minute and meets the floor (see `uncounted`). */
  counted: boolean;
}

/**
 * The MCP transport's DNS rebinding rule for `/mcp`: "servers MUST validate the Origin
 * header… if the Origin header is present and invalid, servers MUST respond with HTTP 403". A page on
 * `evil.example` that makes its name resolve to 127.0.0.1 still sends `Host: evil.example` and
 * `Origin: http://evil.example`, so both are checked, as the inspector checks `Host`.
 *
 * Valid: a loopback name (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`) and the host name of the
 * service's own origin (`--public-url` behind a proxy or Docker), on any port. No header is valid too (only a
 * browser sends `Origin`, and every browser sends `Host`). Anything else is 403 `host_not_allowed` or
 * `origin_not_allowed`, before the credential is looked at.
 */
export const originRule: Step<McpRun> = named('origin', (run, next) => {
  const own = new URL(run.origin);
  const { host, origin: sentOrigin } = run.req.headers;
  if (host !== undefined && !isAllowed(`http://${host}`, own)) {
    throw new ServiceError('host_not_allowed', `The assistant endpoint answers to ${own.hostname} or a loopback name, not to Host ${JSON.stringify(host)} (DNS rebinding protection).`);
  }
  if (sentOrigin !== undefined && !isAllowed(sentOrigin, own)) {
    throw new ServiceError('origin_not_allowed', `The assistant endpoint takes requests from pages of ${own.hostname} or a loopback origin, not from ${JSON.stringify(sentOrigin)}.`);
  }
  return next();
});

/**
 * A host (as `http://<Host>`) or an origin that names this machine or the service's own host name. The
 * port is not compared: a rebinding page brings its own name, never ours.
 */
function isAllowed(text: string, own: URL): boolean {
  const url = URL.parse(text);
  // `Origin: null` (a sandboxed frame, a file) names no one, so it is not trusted.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
  return url.hostname === own.hostname || isLoopbackHost(url.hostname);
}

/** What the sign-in step asks: the gate of `/v1`, the connections, and the OAuth side (sign-in.ts). */
export interface SignInStepParts {
  gate: SignInParts['gate'];
  connections: Pick<AssistantConnections, 'forKey'>;
  /** Who an OAuth access token names (a bearer token that is no API key); counts a guess when it is neither. */
  byToken(authorization: string | undefined, address: string | undefined): Promise<Identified>;
}

/**
 * Who the bearer credential names (spec 5.7; 401): an API key, looked up by `/v1`'s gate (one rule for both), with
 * its assistant connection (a key disconnected from the assistant endpoint still works on `/v1` only), or an
 * OAuth access token the account holder approved.
 */
export function signIn(parts: SignInStepParts): Step<McpRun> {
  return named('identify', async (run, next) => {
    const { authorization } = run.req.headers;
    const byKey = parts.gate.lookup(authorization);
    if (byKey === 'invalid_auth_header') throw new ServiceError('invalid_auth_header', 'Send Authorization: Bearer <API key or OAuth access token>.');
    let who: Identified;
    if (byKey === 'invalid_api_key') who = await parts.byToken(authorization, run.req.socket.remoteAddress);
    else {
      const assistant = parts.connections.forKey(byKey.key);
      if (assistant.disconnectedAt !== null) throw new ServiceError('invalid_api_key', 'This API key was disconnected from the assistant endpoint in the account settings; it still works on /v1. Create another key to connect again.');
      who = { ...byKey, assistant };
    }
    const { limitName: _limitName, ...caller } = who;
    run.who = who;
    run.caller = caller;
    return next();
  });
}

/** The body of a POST, read whole within MAX_MCP_BYTES (413 body_too_large); whether its message counts. */
export const body: Step<McpRun> = named('body', async (run, next) => {
  const { req } = run;
  if (req.method === 'POST') {
    try {
      const read = readBody(req, MAX_MCP_BYTES, Number(req.headers['content-length'] ?? Number.NaN));
      run.body = Buffer.isBuffer(read) ? read : await read;
    } catch (error) {
      if (error instanceof BodyReadError && error.reason === 'too_large') throw new ServiceError('body_too_large', `The body is larger than ${MAX_MCP_BYTES} bytes.`);
      throw new ServiceError('invalid_json', 'The body could not be read.');
    }
  } else {
    req.resume();
  }
  run.counted = !uncounted(req.method, run.body);
  return next();
});

/** A step of `/v1` that runs only for a message that counts. */
const whenCounted = (step: Step<McpRun>): Step<McpRun> => named(step.stepName ?? 'counted', (run, next) => (run.counted ? step(run, next) : next()));

/** `/v1`'s 60 a minute per key (429 with the window's headers), for the messages that count. */
export const mcpLimits = (gate: Parameters<typeof limits>[0]): Step<McpRun> => whenCounted(limits<McpRun>(gate));

/** `/v1`'s balance floor (402), for the messages that count. */
export const mcpFloor = (gate: Parameters<typeof floor>[0]): Step<McpRun> => whenCounted(floor<McpRun>(gate));

/**
 * The requests that do not count against the 60 a minute: GET and DELETE, which a
 * stateless server answers 405 whatever they carry, and `notifications/initialized`, which every
 * 2025-era client sends after `initialize` and which does nothing here. Anything else counts, a batch
 * included.
 */
function uncounted(method: string | undefined, body: Buffer | undefined): boolean {
  if (method === 'GET' || method === 'DELETE') return true;
  if (method !== 'POST' || !body || body.length > 256) return false;
  try {
    const message = JSON.parse(body.toString('utf8')) as { jsonrpc?: unknown; method?: unknown; id?: unknown };
    return message?.jsonrpc === '2.0' && message.method === 'notifications/initialized' && !('id' in message);
  } catch {
    return false;
  }
}

/** What the SDK's factory is handed for one request: the tools' context and the connection under it. */
interface McpCall {
  context: ToolContext;
  transport: ToolTransport;
}

/** A request to `/mcp`, once let in: the response the MCP step writes. */
type EndpointRun = McpRun & { readonly res: ServerResponse };

/**
 * The assistant endpoint (spec 5.7): MCP over Streamable HTTP, stateless, served by the SDK's own
 * `createMcpHandler` (the web-standard face; its 2025-era leg is the SDK's stateless fallback, so GET and
 * DELETE answer 405). A request runs the admission steps (above), then the SDK, whose server of the
 * request puts the tools, defined once, on the runner's chain for the caller: they call the same operations as `/v1`.
 */
export class AssistantEndpoint {
  readonly spending: AssistantSpending;
  readonly signIn: AssistantSignIn;
  readonly settings: AssistantSettings;
  readonly #parts: AssistantParts;
  /** Where a refusal's failures are told: a failed write (`warn`), anything unexpected (`report`). */
  readonly #failures: ToolAnswerParts;
  readonly #handler: McpHttpHandler;
  /** The steps of one request to /mcp: origin › identify › body › limits › floor › mcp. */
  readonly #request: (run: EndpointRun) => Promise<void>;
  /** The chain every tool call runs, with the test controls of /v1 (journal, fault rules). */
  readonly #toolChain: (run: ToolRun) => Promise<void>;

  /** `parts` is what the endpoint uses of the service, not all of it: the service itself satisfies it. */
  constructor(parts: AssistantParts, { controls, onError, fetchClientMetadata }: { controls: AssistantControls; onError: (error: Error) => void; fetchClientMetadata?: typeof fetch | undefined }) {
    this.#parts = parts;
    this.#failures = { warn: parts.warn, report: onError, site: parts };
    this.signIn = new AssistantSignIn(parts, { mcpPath: MCP_PATH, fetchClientMetadata });
    const { connections } = this.signIn;
    this.spending = new AssistantSpending(parts, (id, account) => {
      const row = connections.get(id);
      return row ? connections.dailyLimit(row, account) : 0;
    });
    this.settings = new AssistantSettings(parts, this.signIn, this.spending);
    this.#toolChain = compose<ToolRun>([
      controls.journal,
      toolAnswer(this.#failures),
      controls.faults,
      toolCommand,
    ]);
    const steps: Step<EndpointRun>[] = [
      originRule,
      signIn({ gate: parts.gate, connections, byToken: (authorization, address) => this.signIn.byToken(authorization, address) }),
      body,
      mcpLimits(parts.gate),
      mcpFloor(parts.gate),
      named('mcp', (run) => this.#mcp(run)),
    ];
    this.#request = compose(steps);
    this.#handler = createMcpHandler(
      (ctx) => {
        const call = ctx.authInfo?.extra?.call as McpCall | undefined;
        if (!call) throw new Error('The assistant endpoint was reached without a caller.');
        // Stateless: nothing could ever send `notifications/tools/list_changed`, so it is not advertised.
        const server = new McpServer({ name: 'cliphook', version: API_VERSION }, { instructions: INSTRUCTIONS, capabilities: { tools: { listChanged: false } } });
        // The SDK serves one request per server (it refuses one still serving, and keeps the request's protocol
        // version and client on it), so each request has its own; the tools themselves are defined once.
        return serveTools(server, TOOLS, this.#toolChain, call.context, call.transport);
      },
      { onerror: onError, maxRequestBodySize: MAX_MCP_BYTES },
    );
  }

  /**
   * Answers one request at /mcp; `undefined` once it wrote the response, else the refusal to answer: a Host or
   * Origin that is neither this machine nor the service (403), the credential (401 with the
   * challenge that points to the sign-in, 403 insufficient_scope), the body (413), then the 60 a minute (429)
   * and the balance floor (402) of `/v1` for every message but those that cost nothing;
   * a change that could not be saved on the way is 503 upstream_busy, anything unexpected 500, as on /v1.
   */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<Result | undefined> {
    // `caller` is set by the identify step, before any step reads it.
    const run = { req, res, origin: this.#parts.origin, route: { auth: 'key' }, headers: {}, exchange: { caller: null }, body: undefined, counted: true } as Omit<EndpointRun, 'caller'> as EndpointRun;
    try {
      await this.#request(run);
      return undefined;
    } catch (error) {
      req.resume();
      return this.#refusal(error, run.headers);
    }
  }

  /**
   * The router's handler of `/mcp`: `serve`, and a refusal written by `refused` (the writer of the service's
   * other pages). A call let in runs nothing of the router's other routes.
   */
  route(refused: (req: IncomingMessage, res: ServerResponse, result: Result) => void): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
    return async (req, res) => {
      const result = await this.serve(req, res);
      if (!result) return;
      // An answer that failed once begun is ended, as the router ends it.
      if (res.headersSent) res.destroy();
      else refused(req, res, result);
    };
  }

  /**
   * What an admission step threw as the answer of `/mcp`: the service's one mapping (a
   * failed write 503 and warned, anything else 500 and reported) and its one problem builder, with the
   * challenge of a 401 or 403 that points to the sign-in.
   */
  #refusal(thrown: unknown, headers: Record<string, string>): Result {
    const error = failureOf(thrown, this.#failures);
    // The path the router matched (only `/mcp` reaches here), not the target as sent (`/x/../mcp`).
    const body = problemOf(error, { origin: this.#parts.origin, instance: MCP_PATH });
    const challenge = this.signIn.challenge(error.code);
    return { status: body.status, body, headers: { ...headers, ...problemHeaders(body), ...(challenge ? { 'www-authenticate': challenge } : {}) } };
  }

  /** The MCP exchange itself: the SDK's handler, on a web `Request`, its answer written to `res`. */
  async #mcp({ req, res, caller, body: read, headers: limits }: EndpointRun): Promise<void> {
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    const request = new Request(new URL(req.url ?? MCP_PATH, this.#parts.origin), {
      method: req.method ?? 'GET',
      headers,
      signal: abort.signal,
      ...(read && read.length > 0 ? { body: new Uint8Array(read) } : {}),
    });
    const transport: ToolTransport = {
      onClose(listener) {
        res.once('close', listener);
        return () => void res.off('close', listener);
      },
      drop() {
        if (!req.readableEnded) req.resume();
        res.destroy();
      },
    };
    const assistant = caller.assistant ?? this.signIn.connections.forKey(caller.key);
    const call: McpCall = { context: { parts: this.#parts, spending: this.spending, caller, assistant: assistant.id }, transport };
    const authInfo = { token: '', clientId: caller.assistant?.clientId ?? caller.key.id, scopes: [], extra: { call } };
    const response = await this.#handler.fetch(request, { authInfo });
    // A fault rule cut the connection: nothing more to send.
    if (res.destroyed) {
      void response.body?.cancel().catch(() => undefined);
      return;
    }
    const out: Record<string, string> = { ...limits };
    response.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(response.status, out);
    if (!response.body) {
      res.end();
      return;
    }
    Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>)
      .on('error', () => res.destroy())
      .pipe(res);
  }

  close(): Promise<void> {
    return this.#handler.close();
  }
}
