import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { createMcpHandler, McpServer, type McpHttpHandler } from '@modelcontextprotocol/server';
import { BodyReadError, readBody } from '../../http/read-body.js';
import { fail, type Result } from '../result.js';
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
    const server = new McpServer({ name: 'cliphook', version: '1.1.0' }, { instructions: INSTRUCTIONS });
    const assistant = caller.assistant ?? this.signIn.connections.forKey(caller.key);
    const ctx = { service: this.#service, spending: this.spending, caller, assistant: assistant.id };
    registerClipTools(server, ctx);
    registerAccountTools(server, ctx);
    registerPhotoTools(server, ctx);
    return server;
  }

  /** Answers one request at /mcp from a caller the router's guard let in; `undefined` once it wrote the response. */
  async handle(req: IncomingMessage, res: ServerResponse, caller: Caller): Promise<Result | undefined> {
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
