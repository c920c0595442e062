// No import of `ws` here, not even of its types: `Scheduler` is public (relay/index.ts), and this file's
// declarations must not need @types/ws, a devDependency, in an app's type-check.

/** Timers, injectable so tests drive liveness checks and reply timeouts without waiting. */
export interface Scheduler {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process's timers, unref'd so a forgotten relay or listener never keeps Node alive by its pings. */
export const realScheduler: Scheduler = {
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What the heartbeat uses of a socket: a `ws` WebSocket has all of it. */
export interface WatchedSocket {
  on(event: 'message' | 'ping' | 'pong', listener: () => void): this;
  once(event: 'close', listener: () => void): this;
  ping(): void;
  terminate(): void;
}

export interface HeartbeatOptions {
  clock: () => number;
  scheduler: Scheduler;
  /** How often to ping each socket and check its deadline. */
  intervalMs: number;
  /** A socket silent (no message, ping or pong) for longer than this is terminated. */
  deadlineMs: number;
}

/**
 * Pings sockets and terminates the ones whose peer went quiet: a half-open TCP connection (a laptop
 * that slept, a NAT that forgot) never errors by itself, and listeners stalled silently for hours in
 * other tools (stripe-cli#389, #721). A socket is noticed dead at most `deadlineMs + intervalMs` after
 * its peer was last heard. One timer serves every socket, so 10,000 idle listeners cost one interval.
 */
export class Heartbeat {
  readonly #lastSeen = new Map<WatchedSocket, number>();
  readonly #options: HeartbeatOptions;
  #timer: unknown = null;

  constructor(options: HeartbeatOptions) {
    this.#options = options;
  }

  /** Starts watching `socket`; any message, ping or pong from the peer counts as alive. */
  watch(socket: WatchedSocket): void {
    const seen = () => this.#lastSeen.set(socket, this.#options.clock());
    seen();
    socket.on('message', seen).on('ping', seen).on('pong', seen);
    socket.once('close', () => this.#lastSeen.delete(socket));
    if (this.#timer === null) this.#timer = this.#options.scheduler.setInterval(() => this.tick(), this.#options.intervalMs);
  }

  /** One round: terminate the silent, ping the rest. The scheduler calls it every `intervalMs`. */
  tick(): void {
    const now = this.#options.clock();
    for (const [socket, lastSeen] of this.#lastSeen) {
      if (now - lastSeen > this.#options.deadlineMs) {
        this.#lastSeen.delete(socket);
        socket.terminate();
        continue;
      }
      try {
        socket.ping();
      } catch {
        // Still connecting or already closing: the close handler cleans up.
      }
    }
  }

  /** Stops the timer; sockets are left as they are. */
  stop(): void {
    if (this.#timer !== null) this.#options.scheduler.clearInterval(this.#timer);
    this.#timer = null;
    this.#lastSeen.clear();
  }
}
