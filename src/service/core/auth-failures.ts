import { isIPv6 } from 'node:net';

/** Failed authentications (an unknown or revoked key or token) one client address may make in a window. */
export const AUTH_FAILURES_PER_WINDOW = 30;
/** The window, on the service's clock: a fixed minute, starting at the address's first failure in it. */
export const AUTH_FAILURE_WINDOW_MS = 60_000;
/** Addresses tracked at most; past it the oldest window is forgotten first. */
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
  /** @default MAX_TRACKED_ADDRESSES */
  maxAddresses?: number;
}

/**
 * Counts failed authentications per client address (issue 20 item 6: unknown API keys were never limited,
 * 700-990 guesses a second). Once an address has failed `limit` times in its window, every credential it
 * sends is refused (429 with `Retry-After`) until the window ends, the right one too: answering a right
 * key differently from a wrong one would let the guessing go on. IPv6 addresses count per /64, the
 * block one subscriber holds. Memory is bounded: windows end on the injected clock and at most
 * `maxAddresses` are kept.
 * @example if (!failures.gate(address).allowed) refuse429(); else if (wrongKey) failures.fail(address);
 */
export class AuthFailures {
  readonly limit: number;
  readonly windowMs: number;
  readonly #now: () => number;
  readonly #maxAddresses: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

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

  /** Whether `address` may present a credential now. */
  gate(address: string | undefined): AuthGate {
    const window = this.#live(addressKey(address));
    if (!window || window.count < this.limit) return { allowed: true };
    return { allowed: false, limit: this.limit, retryAfter: Math.max(1, Math.ceil((window.start + this.windowMs - this.#now()) / 1000)) };
  }

  /** Counts one failed authentication of `address`. */
  fail(address: string | undefined): void {
    const key = addressKey(address);
    const window = this.#live(key);
    if (window) {
      window.count++;
      return;
    }
    if (this.#windows.size >= this.#maxAddresses) this.#sweep();
    if (this.#windows.size >= this.#maxAddresses) this.#windows.delete(this.#windows.keys().next().value!);
    this.#windows.set(key, { start: this.#now(), count: 1 });
  }

  /** Addresses currently tracked. */
  get size(): number {
    return this.#windows.size;
  }

  #live(key: string): { start: number; count: number } | undefined {
    const window = this.#windows.get(key);
    if (window && this.#now() >= window.start + this.windowMs) {
      this.#windows.delete(key);
      return undefined;
    }
    return window;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [key, window] of this.#windows) if (now >= window.start + this.windowMs) this.#windows.delete(key);
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
