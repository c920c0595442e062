import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { createMcpHandler, McpServer, type McpHttpHandler } from '@modelcontextprotocol/server';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { API_VERSION, LIMITS } from '../contract/limits.js';
import { ServiceError } from '../contract/problems.js';
import type { Caller, Identified } from '../core/gate.js';
import { rateLimitHeaders } from '../core/rate-limit.js';
import { fail, type Result } from '../http/result.js';
import type { Service } from '../service.js';
import { checkOriginAndHost } from './origin-check.js';
import { registerAccountTools } from './account-tools.js';
import { registerClipTools } from './clip-tools.js';
import { registerPhotoTools } from './photo-tools.js';
import { AssistantSpending } from './spending.js';
import { AssistantSignIn } from './sign-in.js';
import { AssistantSettings } from './settings.js';
import type { Step } from '../runner/chain.js';
import { faults, journal } from '../testing/steps.js';
import { onRunner, toolAnswer, toolCommand, type ToolRun, type ToolTransport } from './tool-runner.js';

/** The path of the assistant endpoint and of its status, at the service's origin. */
export const MCP_PATH = '/mcp';
export const MCP_STATUS_PATH = '/mcp/status';

/** The largest JSON-RPC body the endpoint reads. */
const MAX_MCP_BYTES = LIMITS.jsonBodyBytes;

const INSTRUCTIONS =
  "Makes video clips and images on the person's cliphook account. Every spending tool needs max_credits: tell the person the price first " +
  `(list_effects shows prices). The assistant has a daily credit limit (get_account shows what remains) and at most ${LIMITS.assistant.concurrentClips} clips running at once. ` +
  `create_clip returns at once; get_clip waits up to ${LIMITS.assistant.toolWaitSeconds} s for the clip to end. ` +
  "The assistant cannot send photos: start_photo_upload gives a link for the person to upload one, and get_photo says when it is ready for create_clip's photo_ids.";

/**
 * The assistant endpoint (spec 5.7): MCP over Streamable HTTP, stateless, served by the SDK's own
 * `createMcpHandler` (the web-standard face; its 2025-era leg is the SDK's stateless fallback, so GET and
 * DELETE answer 405). A fresh `McpServer` per request carries the caller: the tools call the same
 * operations as `/v1`.
 */
export class AssistantEndpoint {
  readonly spending: AssistantSpending;
  readonly #service: Service;
  readonly #handler: McpHttpHandler;
  /** Issue 31 item 2: the chain every tool call runs, with the test controls of /v1 (journal, fault rules). */
  readonly #toolSteps: readonly Step<ToolRun>[];

  readonly signIn: AssistantSignIn;
  readonly settings: AssistantSettings;

  constructor(service: Service, { onError, fetchClientMetadata }: { onError: (error: Error) => void; fetchClientMetadata?: typeof fetch | undefined }) {
    this.#service = service;
    this.signIn = new AssistantSignIn(service, { mcpPath: MCP_PATH, fetchClientMetadata });
    const { connections } = this.signIn;
    this.spending = new AssistantSpending(service, (id, account) => {
      const row = connections.get(id);
      return row ? connections.dailyLimit(row, account) : 0;
    });
    this.settings = new AssistantSettings(service, this.signIn, this.spending);
    this.#toolSteps = [
      journal({ journal: service.journal, now: () => service.clock.now() }),
      toolAnswer({ warn: service.warn, report: onError }),
      faults({ rules: service.faultRules, origin: () => service.origin }),
      toolCommand,
    ];
    this.#handler = createMcpHandler(
      (ctx) => {
        const caller = ctx.authInfo?.extra?.caller as Caller | undefined;
        const transport = ctx.authInfo?.extra?.transport as ToolTransport | undefined;
        if (!caller || !transport) throw new Error('The assistant endpoint was reached without a caller.');
        return this.server(caller, transport);
      },
      { onerror: onError, maxRequestBodySize: MAX_MCP_BYTES },
    );
  }

  /**
   * The MCP server of one request, with every tool bound to `caller` and its assistant connection, each on
   * the runner's chain. The SDK's `createMcpHandler` asks for a fresh server per HTTP request, so it is not
   * built once.
   */
  server(caller: Caller, transport: ToolTransport): McpServer {
    // Stateless: nothing could ever send `notifications/tools/list_changed`, so it is not advertised (issue 20 item 12).
    const server = new McpServer({ name: 'cliphook', version: API_VERSION }, { instructions: INSTRUCTIONS, capabilities: { tools: { listChanged: false } } });
    const assistant = caller.assistant ?? this.signIn.connections.forKey(caller.key);
    const ctx = { service: this.#service, spending: this.spending, caller, assistant: assistant.id };
    const tools = onRunner(server, this.#toolSteps, caller, transport);
    registerClipTools(tools, ctx);
    registerAccountTools(tools, ctx);
    registerPhotoTools(tools, ctx);
    return server;
  }

  /**
   * Answers one request at /mcp; `undefined` once it wrote the response, else the refusal to answer. In
   * order: DNS rebinding (a Host or Origin that is neither this machine nor the service is 403, issue 20 item
   * 4), the credential (401 with the challenge that points to the sign-in, 403 insufficient_scope), then,
   * once the body says what it is, the 60 a minute and the balance floor of `/v1` for every message but
   * those that cost nothing (`uncounted`, issue 20 item 12).
   */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<Result | undefined> {
    const foreign = checkOriginAndHost(req, this.#service.origin);
    if (foreign) {
      req.resume();
      return foreign;
    }
    let who: Identified;
    try {
      who = await this.signIn.identify(req.headers.authorization, req.socket.remoteAddress);
      // The account's own time from here on (issue 22): its daily limit, waits and rate window.
      this.#service.clock.actFor(who.account.id);
    } catch (error) {
      req.resume();
      return this.#refusal(error);
    }
    return this.#handle(req, res, who);
  }

  /** A `ServiceError` as the answer of `/mcp`, with its challenge for a 401 or 403. */
  #refusal(error: unknown, headers: Record<string, string> = {}): Result {
    if (!(error instanceof ServiceError)) throw error;
    const result = fail(error.code, { detail: error.detail, ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }), ...(error.extra ? { extra: error.extra } : {}), ...(error.code === 'insufficient_credits' ? { userActionUrl: `${this.#service.origin}/settings/top-up` } : {}) });
    const challenge = this.signIn.challenge(error.code);
    return { ...result, headers: { ...headers, ...result.headers, ...(challenge ? { 'www-authenticate': challenge } : {}) } };
  }

  async #handle(req: IncomingMessage, res: ServerResponse, who: Identified): Promise<Result | undefined> {
    let body: Buffer | undefined;
    if (req.method === 'POST') {
      try {
        const read = readBody(req, MAX_MCP_BYTES, Number(req.headers['content-length'] ?? Number.NaN));
        body = Buffer.isBuffer(read) ? read : await read;
      } catch (error) {
        req.resume();
        if (error instanceof BodyReadError && error.reason === 'too_large') return fail('body_too_large', { detail: `The body is larger than ${MAX_MCP_BYTES} bytes.` });
        return fail('invalid_json', { detail: 'The body could not be read.' });
      }
    } else {
      req.resume();
    }
    const { limitName: _limitName, ...identified } = who;
    let caller: Caller = identified;
    let limits: Record<string, string> = {};
    if (!uncounted(req.method, body)) {
      const { gate } = this.#service;
      try {
        const admitted = await gate.admit(who);
        limits = rateLimitHeaders(admitted.decision);
        if (!admitted.decision.allowed) throw new ServiceError('rate_limit_exceeded', `At most ${admitted.decision.limit} requests a minute per API key.`, { retryAfter: admitted.decision.retryAfter });
        gate.floor(admitted.caller.account);
        caller = admitted.caller;
      } catch (error) {
        return this.#refusal(error, limits);
      }
    }
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    const request = new Request(new URL(req.url ?? MCP_PATH, this.#service.origin), {
      method: req.method ?? 'GET',
      headers,
      signal: abort.signal,
      ...(body && body.length > 0 ? { body: new Uint8Array(body) } : {}),
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
    const authInfo = { token: '', clientId: caller.assistant?.clientId ?? caller.key.id, scopes: [], extra: { caller, transport } };
    const response = await this.#handler.fetch(request, { authInfo });
    // A fault rule cut the connection (issue 31 item 2): nothing more to send.
    if (res.destroyed) {
      void response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    const out: Record<string, string> = { ...limits };
    response.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(response.status, out);
    if (!response.body) {
      res.end();
      return undefined;
    }
    Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>)
      .on('error', () => res.destroy())
      .pipe(res);
    return undefined;
  }

  close(): Promise<void> {
    return this.#handler.close();
  }
}

/**
 * The requests that do not count against the 60 a minute (issue 20 item 12): GET and DELETE, which a
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
