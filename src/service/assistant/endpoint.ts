import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { createMcpHandler, McpServer, type McpHttpHandler } from '@modelcontextprotocol/server';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { fail, type Result } from '../result.js';
import type { Authenticated } from '../guard.js';
import type { Caller, Service } from '../service.js';
import { registerAccountTools } from './account-tools.js';
import { registerClipTools } from './clip-tools.js';
import { registerPhotoTools } from './photo-tools.js';
import { AssistantSpending } from './spending.js';
import { AssistantSignIn } from './sign-in.js';
import { AssistantSettings } from './settings.js';

/** The path of the assistant endpoint and of its status, at the service's origin. */
export const MCP_PATH = '/mcp';
export const MCP_STATUS_PATH = '/mcp/status';

/** The largest JSON-RPC body the endpoint reads. */
const MAX_MCP_BYTES = 1024 * 1024;

const INSTRUCTIONS =
  'Makes video clips and images on the person\'s cliphook account. Every spending tool needs max_credits: tell the person the price first ' +
  '(list_effects shows prices). The assistant has a daily credit limit (get_account shows what remains) and at most 3 clips running at once. ' +
  'create_clip returns at once; get_clip waits up to 45 s for the clip to end. ' +
  'The assistant cannot send photos: start_photo_upload gives a link for the person to upload one, and get_photo says when it is ready for create_clip\'s photo_ids.';

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
    this.#handler = createMcpHandler(
      (ctx) => {
        const caller = ctx.authInfo?.extra?.caller as Caller | undefined;
        if (!caller) throw new Error('The assistant endpoint was reached without a caller.');
        return this.server(caller);
      },
      { onerror: onError, maxRequestBodySize: MAX_MCP_BYTES },
    );
  }

  /** The MCP server of one request, with every tool bound to `caller` and its assistant connection. */
  server(caller: Caller): McpServer {
    // Stateless: nothing could ever send `notifications/tools/list_changed`, so it is not advertised (issue 20 item 12).
    const server = new McpServer({ name: 'cliphook', version: '1.1.0' }, { instructions: INSTRUCTIONS, capabilities: { tools: { listChanged: false } } });
    const assistant = caller.assistant ?? this.signIn.connections.forKey(caller.key);
    const ctx = { service: this.#service, spending: this.spending, caller, assistant: assistant.id };
    registerClipTools(server, ctx);
    registerAccountTools(server, ctx);
    registerPhotoTools(server, ctx);
    return server;
  }

  /**
   * Answers one request at /mcp from someone the router's guard identified; `undefined` once it wrote the
   * response. The 60 a minute and the balance floor of `/v1` apply once the body is read, to every
   * message but those that cost nothing (`uncounted`, issue 20 item 12).
   */
  async handle(req: IncomingMessage, res: ServerResponse, who: Authenticated): Promise<Result | undefined> {
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
    let caller: Caller;
    if (uncounted(req.method, body)) {
      caller = { account: who.account, key: who.key, headers: {}, ...(who.assistant ? { assistant: who.assistant } : {}) };
    } else {
      const admitted = await this.#service.admit(who);
      if (!admitted.ok) return admitted.result;
      caller = admitted.caller;
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
    const assistant = caller.assistant;
    const authInfo = { token: '', clientId: assistant?.clientId ?? caller.key.id, scopes: [], extra: { caller } };
    const response = await this.#handler.fetch(request, { authInfo });
    const out: Record<string, string> = { ...caller.headers };
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
