#!/usr/bin/env node
import { main } from './main.js';

// `cliphook openapi | head` and the like: a reader that stops early is not an error of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

process.exitCode = await main();
