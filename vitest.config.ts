import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Examples import the package by name, as a user would; tests run them against the source.
    alias: [
      { find: /^cliphook\/web$/, replacement: fileURLToPath(new URL('./src/web.ts', import.meta.url)) },
      { find: /^cliphook\/service$/, replacement: fileURLToPath(new URL('./src/service/index.ts', import.meta.url)) },
      { find: /^cliphook$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
    ],
  },
  test: {
    // The examples' own test files run too, as a user would run them (issue 22).
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    // Checks every answer of the service against the OpenAPI document (issue 21).
    setupFiles: ['test/helpers/setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
