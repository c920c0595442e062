/**
 * Thrown by commands to end the process with a one-line message and an exit code. Only the entry point
 * (`cli/main.ts`) prints it and calls `process.exit`.
 */
export class ExitError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'ExitError';
    this.exitCode = exitCode;
  }
}
