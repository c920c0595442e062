import { ExitError } from './errors.js';

/** The helpers the long-running commands (relay, listen, serve, dev) share: one place each. */

/** A port flag as a number, or a usage error naming the flag. */
export function parsePort(flag: string, text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ExitError(`${flag} must be 0-65535, got ${text}.`, 2);
  return port;
}

/** A library TypeError about an option (`publicUrl`), as a one-line usage error about the flag typed (`--public-url`). */
export function flagError(error: TypeError, flags: Readonly<Record<string, string>>): ExitError {
  const message = error.message.replace(/`(\w+)`/g, (whole, name: string) => flags[name] ?? whole);
  return new ExitError(message.split('\n')[0]!, 2);
}

/** Aborts on SIGINT or SIGTERM: what stops a running command. */
export function stopSignal(): AbortSignal {
  const controller = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => controller.abort());
  return controller.signal;
}

/** Resolves once `signal` has aborted (at once if it already has). */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
