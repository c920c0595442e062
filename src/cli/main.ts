import { Command, CommanderError } from 'commander';
import { ExitError } from './errors.js';
import { commands } from './commands.js';
import { version } from '../version.js';

/** Builds the `cliphook` program from the command table. */
export function buildProgram(): Command {
  const program = new Command('cliphook')
    .description('Webhook toolkit for the Clip and Image Generation Service')
    .version(version, '-v, --version')
    .showHelpAfterError('(cliphook --help lists the commands and flags)')
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}

/**
 * The one place that catches errors and sets the exit code. Commands throw `ExitError` for expected
 * failures; anything else is a bug and is printed with its stack.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode; // commander already printed it
    if (error instanceof ExitError) {
      if (error.message) process.stderr.write(`cliphook: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(`cliphook: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    return 70;
  }
}
