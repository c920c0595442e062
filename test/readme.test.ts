import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as cliphook from 'cliphook';

// Issue 29 items 16–18: what the README tells a newcomer, held to what the repository does. Each check
// reads the thing the sentence is about (package.json, the test helpers, openapi-typescript's manifest).

const root = fileURLToPath(new URL('../', import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, 'utf8');
const readme = read('README.md');
/** Whether the README says `text` (a failure names the text, not the whole README). */
const says = (text: string | undefined) => expect(text !== undefined && readme.includes(text), `the README says ${String(text)}`).toBe(true);
/** The README's TypeScript code blocks. */
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);

describe('the README', () => {
  it('names every step npm test runs, and the TypeScript its type-check uses', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    const steps = scripts.test!.split('&&').map((step) => step.trim());
    expect(steps).toEqual(['npm run typecheck', 'npm run cycles', 'vitest run']);
    for (const step of ['`npm run typecheck`', '`npm run cycles`', 'vitest']) says(step);
    expect(scripts.typecheck).toContain('typescript-7/');
    says('type-check with TypeScript 7');
  });

  it('quotes the lines the Redis and browser tests print where they skip, and says .ci/run installs both', () => {
    const redisNote = /console\.log\('(Redis tests skipped: [^']+)'\)/.exec(read('test/helpers/redis.ts'))?.[1];
    const browserNote = /console\.warn\(`(skipping the browser tests: [^`]+)`\)/.exec(read('test/helpers/browser.ts'))?.[1]?.replace('${CHROMIUM_PATH}', '/usr/bin/chromium');
    expect(redisNote).toBeDefined();
    expect(browserNote).toBeDefined();
    says(redisNote);
    says(browserNote);
    const ci = read('.ci/run');
    expect(ci).toContain('apt-get install -y --no-install-recommends redis-server');
    expect(ci).toContain('apt-get install -y --no-install-recommends chromium');
    says('`.ci/run`');
  });

  it('shows a receiver for tests on a MemoryDeliveryStore, not the locked .cliphook/deliveries.json', () => {
    const forTests = blocks.find((block) => block.includes('In a test'));
    expect(forTests).toMatch(/import \{ createReceiver, MemoryDeliveryStore \} from 'cliphook';/);
    expect(forTests).toMatch(/createReceiver\(\{[^}]*store: new MemoryDeliveryStore\(\)/);
    expect(typeof cliphook.MemoryDeliveryStore).toBe('function');
    says('FileLockedError');
  });

  it('installs the TypeScript that openapi-typescript’s peer range asks for, with the typed-client recipe', () => {
    const { peerDependencies } = JSON.parse(read('node_modules/openapi-typescript/package.json')) as { peerDependencies: Record<string, string> };
    expect(peerDependencies.typescript).toBe('^5.x');
    says('npm i -D openapi-typescript typescript@5');
    says('npx -p typescript@5 -p openapi-typescript@7 openapi-typescript');
  });

  it('says that examples with a top-level await are ES modules ("type": "module")', () => {
    expect(blocks.filter((block) => /^(const .* = )?await /m.test(block)).length).toBeGreaterThan(0);
    says('`"type": "module"`');
  });
});
