import { Command, CommanderError } from 'commander';
import { ExitError } from './errors.js';
import { commands } from './commands.js';
import { version } from '../version.js';

/** Builds the `cliphook` program from the command table. */
export function buildProgram(): Command {
  const program = new Command('cliphook')
    .description('Webhook toolkit for the Clip and Image Generation Service')
    .version(version, '-v, --version')
    .exitOverride();
  for (const register of commands) register(program);
  usageErrorsAsOneLine(program);
  return program;
}

/**
 * Makes commander's usage errors (unknown option or command, missing argument, bad value) read like the
 * commands' own: one line, `cliphook: <reason> (see cliphook <command> --help)`. Each command gets its
 * own hint, so it names the help that lists the flags the user got wrong.
 */
function usageErrorsAsOneLine(command: Command, path = command.name()): void {
  command.showHelpAfterError(false).configureOutput({
    outputError: (text, write) => {
      // "error: unknown option '--x'\n(Did you mean --url?)" -> "unknown option '--x' (Did you mean --url?)"
      const reason = text.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ');
      write(`cliphook: ${reason} (see ${path} --help)\n`);
    },
  });
  for (const sub of command.commands) usageErrorsAsOneLine(sub, `${path} ${sub.name()}`);
}

/**
 * The one place that catches errors and sets the exit code: 0 done, 1 the command failed, 2 a usage
 * error. Commands throw `ExitError` for expected failures; anything else is a bug and is printed with
 * its stack (exit 70).
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (error) {
    // Commander already printed it: --help and --version end 0, every usage error 2.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof ExitError) {
      if (error.message) process.stderr.write(`cliphook: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(`cliphook: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    return 70;
  }
}
