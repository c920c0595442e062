import type { EmitterLogger } from '../emitter/types.js';

/** The CLI's emitter logger: only real problems, on stderr, one line each. */
export const quietLogger: EmitterLogger = {
  info: () => undefined,
  warn: (message) => process.stderr.write(`cliphook: warning: ${message}\n`),
  error: (message, details) => process.stderr.write(`cliphook: ${message}${details?.error ? `: ${String(details.error)}` : ''}\n`),
};
