import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (a run's tail on 2 workers), started first: a clean checkout has no timing
 * cache, so vitest would order by file size and could leave the 75 s package test for last, alone.
 */
const SLOW_FIRST = ['test/package.test.ts', 'test/receiver/frameworks/next.test.ts', 'test/cli/serve.test.ts', 'test/e2e/serve-redis.test.ts', 'test/service/contract/bodies.property.test.ts', 'test/e2e/emitter-bullmq.test.ts', 'test/e2e/relay-redis.test.ts', 'test/e2e/relay-faults.test.ts'];

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => SLOW_FIRST.findIndex((slow) => file.moduleId.replaceAll('\\', '/').endsWith(slow));
    return [...sorted.filter((file) => rank(file) !== -1).sort((a, b) => rank(a) - rank(b)), ...sorted.filter((file) => rank(file) === -1)];
  }
}

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
    // Vitest's default is one worker fewer than the cores: one worker on a 2-core machine, where most test
    // files wait on sockets, child processes and the browser rather than compute. Two keep both cores busy.
    maxWorkers: 2,
    sequence: { sequencer: SlowFirst },
  },
});
