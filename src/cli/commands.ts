import type { Command } from 'commander';

/**
 * The command table. Each entry registers one command whose action lazily imports its module from
 * `commands/<name>.ts`, so `cliphook --help` loads nothing heavy.
 */
export const commands: ReadonlyArray<(program: Command) => void> = [];
