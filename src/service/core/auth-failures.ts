import { isIPv6 } from 'node:net';

/** Failed authentications (an unknown or revoked key or token) one client address may make in a window. */
export const AUTH_FAILURES_PER_WINDOW = 30;
/** The window, on the service's clock: a fixed minute, starting at the address's first failure in it. */
export const AUTH_FAILURE_WINDOW_MS = 60_000;
/** Addresses counted at most, and locked at most (two tables): past it the oldest count is forgotten first, never a lock. */
export const MAX_TRACKED_ADDRESSES = 10_000;

/** Whether an address may try a credential now, and if not, for how long. */
export type AuthGate = { allowed: true } | { allowed: false; retryAfter: number; limit: number };

export interface AuthFailuresOptions {
  /** Milliseconds since the epoch: the service's simulated clock. */
  now: () => number;
  /** @default AUTH_FAILURES_PER_WINDOW */
  limit?: number;
  /** @default AUTH_FAILURE_WINDOW_MS */
  windowMs?: number;
  /**
   * Addresses whose failures are counted at most, and as many locked ones besides. A new count past it
   * forgets the oldest count; a lock is never forgotten before its window ends, and while the locked
   * table is full every address's wrong credentials are refused. @default MAX_TRACKED_ADDRESSES
   */
  maxAddresses?: number;
}

interface Window {
  start: number;
  count: number;
}

/**
 * Counts failed authentications per client address, so no client can guess API keys at hundreds a second.
 * Once an address has failed `limit` times in its window, every credential it
 * sends that is not valid is refused (429 with `Retry-After`) until the window ends. It is asked only
 * about credentials already found invalid: a valid key or the admin token is never
 * refused, so no local process can lock out another by sending wrong keys. IPv6 addresses count per /64,
 * the block one subscriber holds. Memory is bounded: windows end on the injected clock, at most
 * `maxAddresses` are counted and as many locked, and a flood of fresh addresses never unlocks one.
 * @example if (wrongKey) { if (!failures.gate(address).allowed) refuse429(); failures.fail(address); refuse401(); }
 */
export class AuthFailures {
  readonly limit: number;
  readonly windowMs: number;
  readonly #now: () => number;
  readonly #maxAddresses: number;
  /** Addresses below the limit, oldest window first (each is added with the clock's now). */
  readonly #counting = new Map<string, Window>();
  /** Addresses at the limit, in the order they got there. */
  readonly #locked = new Map<string, Window>();

  /** Forgets every window (`POST /test_helpers/reset`). */
  clear(): void {
    this.#counting.clear();
    this.#locked.clear();
  }

  constructor({ now, limit = AUTH_FAILURES_PER_WINDOW, windowMs = AUTH_FAILURE_WINDOW_MS, maxAddresses = MAX_TRACKED_ADDRESSES }: AuthFailuresOptions) {
    if (typeof now !== 'function') throw new TypeError('Expected `now` to be a function.');
    for (const [name, value] of [['limit', limit], ['windowMs', windowMs], ['maxAddresses', maxAddresses]] as const) {
      if (!(Number.isSafeInteger(value) && value > 0)) throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${value}.`);
    }
    this.#now = now;
    this.limit = limit;
    this.windowMs = windowMs;
    this.#maxAddresses = maxAddresses;
  }

  /** Whether `address` may present another credential that is not valid now. */
  gate(address: string | undefined): AuthGate {
    const key = addressKey(address);
    const window = this.#live(this.#locked, key) ?? this.#live(this.#counting, key);
    if (window && window.count >= this.limit) return this.#refusal(window);
    // A full table of live locks (a flood of addresses) refuses every guess rather than
    // unlock one, until the oldest lock ends.
    this.#expire(this.#locked);
    const oldest = this.#locked.values().next().value;
    if (oldest && this.#locked.size >= this.#maxAddresses) return this.#refusal(oldest);
    return { allowed: true };
  }

  /** Counts one failed authentication of `address`. */
  fail(address: string | undefined): void {
    const key = addressKey(address);
    if (this.#live(this.#locked, key)) return;
    let window = this.#live(this.#counting, key);
    if (!window) {
      this.#expire(this.#counting);
      // A new count forgets the oldest count, never a lock, so a flood of fresh addresses unlocks no one.
      if (this.#counting.size >= this.#maxAddresses) this.#counting.delete(this.#counting.keys().next().value!);
      this.#counting.set(key, (window = { start: this.#now(), count: 0 }));
    }
    window.count++;
    if (window.count < this.limit) return;
    this.#expire(this.#locked);
    // With no room for the lock it stays a full count (refused all the same) until there is.
    if (this.#locked.size >= this.#maxAddresses) return;
    this.#counting.delete(key);
    this.#locked.set(key, window);
  }

  /** Addresses currently tracked (counted and locked). */
  get size(): number {
    return this.#counting.size + this.#locked.size;
  }

  #refusal(window: Window): AuthGate {
    return { allowed: false, limit: this.limit, retryAfter: Math.max(1, Math.ceil((window.start + this.windowMs - this.#now()) / 1000)) };
  }

  #live(table: Map<string, Window>, key: string): Window | undefined {
    const window = table.get(key);
    if (window && this.#now() >= window.start + this.windowMs) {
      table.delete(key);
      return undefined;
    }
    return window;
  }

  /** Drops the ended windows at the head of `table`: each call costs what it removes, whatever the table holds. */
  #expire(table: Map<string, Window>): void {
    const now = this.#now();
    for (const [key, window] of table) {
      if (now < window.start + this.windowMs) return;
      table.delete(key);
    }
  }
}

/** The key an address counts under: IPv4 (also IPv4-mapped) as is, IPv6 by its /64. */
function addressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const full = tail === undefined ? left : [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${full.slice(0, 4).map((part) => part.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
