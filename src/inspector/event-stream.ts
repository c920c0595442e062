import type { IncomingMessage, ServerResponse } from 'node:http';

export interface EventStreamOptions {
  /** Pages connected at once; one more is answered 503 (a tab left open per restart adds up). @default 32 */
  maxClients?: number;
  /** Bytes a slow page may have waiting; past it the page is dropped and reconnects (then reloads the list). @default 4 MiB */
  maxBufferedBytes?: number;
  /** A comment line this often keeps proxies and idle timers from closing the stream. @default 15_000 */
  heartbeatMs?: number;
  /** Told when the first page connects (`true`) and the last one goes (`false`): nothing to send meanwhile. */
  onWatch?: (watching: boolean) => void;
}

/**
 * Server-sent events to the pages: one message per change, serialised once for every page. The page
 * never polls; `EventSource` reconnects by itself, and the page reloads the list when it does.
 * @example stream.open(req, res); stream.send('exchange', summary);
 */
export class EventStream {
  readonly #clients = new Set<ServerResponse>();
  readonly #maxClients: number;
  readonly #maxBufferedBytes: number;
  readonly #heartbeat: ReturnType<typeof setInterval>;
  readonly #onWatch: (watching: boolean) => void;

  constructor({ maxClients = 32, maxBufferedBytes = 4 * 1024 * 1024, heartbeatMs = 15_000, onWatch = () => undefined }: EventStreamOptions = {}) {
    this.#onWatch = onWatch;
    this.#maxClients = maxClients;
    this.#maxBufferedBytes = maxBufferedBytes;
    this.#heartbeat = setInterval(() => this.#write(': ping\n\n'), heartbeatMs);
    this.#heartbeat.unref();
  }

  get clients(): number {
    return this.#clients.size;
  }

  /** Answers `req` with the stream; `false` when too many pages are connected (the caller answers 503). */
  open(req: IncomingMessage, res: ServerResponse, hello: unknown): boolean {
    if (this.#clients.size >= this.#maxClients) return false;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', 'x-content-type-options': 'nosniff' });
    res.write(`retry: 1000\n${frame('hello', hello)}`);
    this.#clients.add(res);
    if (this.#clients.size === 1) this.#onWatch(true);
    const drop = () => this.#drop(res);
    req.once('close', drop);
    res.once('close', drop);
    return true;
  }

  send(type: string, data: unknown): void {
    if (this.#clients.size > 0) this.#write(frame(type, data));
  }

  /** Ends every stream (the pages show "disconnected" and reconnect to the next process). */
  close(): void {
    clearInterval(this.#heartbeat);
    for (const res of this.#clients) res.end();
    if (this.#clients.size > 0) this.#onWatch(false);
    this.#clients.clear();
  }

  #drop(res: ServerResponse): void {
    if (this.#clients.delete(res) && this.#clients.size === 0) this.#onWatch(false);
  }

  #write(text: string): void {
    for (const res of this.#clients) {
      if (res.writableLength > this.#maxBufferedBytes) {
        // A page that stopped reading (a background tab, a stalled socket) is not buffered for without end.
        this.#drop(res);
        res.destroy();
        continue;
      }
      res.write(text);
    }
  }
}

function frame(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}
