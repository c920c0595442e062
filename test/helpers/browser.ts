import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core (no browser download): `.ci/run` installs `chromium` when it
 * is missing, so in CI these tests run and never skip. Elsewhere, without it, they skip with one line.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Headless, and nothing that would reach the network on its own (updates, sync, QUIC probes).
const ARGS = [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-default-apps',
];

/** Whether the browser tests can run here; throws in CI (CI=true) when Chromium is missing. */
export function hasChromium(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI === 'true') throw new Error(`Chromium is missing at ${CHROMIUM_PATH}: the browser tests never skip in CI (.ci/run installs it with apt-get install chromium).`);
  console.warn(`skipping the browser tests: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`);
  return false;
}

export interface Browser {
  context: BrowserContext;
  /** A new page, light unless asked, at 1280×800. */
  page(options?: { colorScheme?: 'light' | 'dark' }): Promise<Page>;
  close(): Promise<void>;
}

/** Launches Chromium with a fresh user-data-dir (removed on close). One per test file, shared by its tests. */
export async function launchBrowser(): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'cliphook-chromium-'));
  // bypassCSP: axe-core goes in as an inline script tag, which the inspector's own CSP (rightly) forbids.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, args: ARGS, headless: true, viewport: { width: 1280, height: 800 }, bypassCSP: true });
  return {
    context,
    async page({ colorScheme = 'light' } = {}) {
      const page = await context.newPage();
      await page.emulateMedia({ colorScheme });
      return page;
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

const AXE = join(dirname(createRequire(import.meta.url).resolve('axe-core')), 'axe.min.js');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[]; failureSummary?: string }>;
}

/** Runs axe-core in the page and returns its serious and critical violations (an empty array passes). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: await readFile(AXE, 'utf8') });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document): Promise<{ violations: AxeViolation[] }> } }).axe;
    const { violations } = await axe.run(document);
    return violations.map(({ id, impact, help, nodes }) => ({ id, impact, help, nodes: nodes.map(({ target, failureSummary }) => ({ target, failureSummary })) }));
  });
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/** Where the browser tests save their screenshots (git-ignored). */
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/inspector/', import.meta.url));

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/**
 * Opens an inspector page and waits until its event stream is live. The page's script errors are checked
 * (none allowed) and the page closed by the cleanup pushed on `cleanups`.
 */
export async function openInspectorPage(browser: Browser, url: string, cleanups: Array<() => Promise<unknown>>, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const page = await browser.page({ colorScheme });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  cleanups.push(async () => {
    if (errors.length > 0) throw new Error(`the inspector page threw: ${errors.join('; ')}`);
    await page.close();
  });
  await page.goto(url);
  await page.locator('#live[data-state="live"]').waitFor();
  return page;
}

/**
 * One Chromium for a test file: launched before its tests (when the machine has one), closed after them
 * with every cleanup pushed on `cleanups` (pages first). `run` is false where the tests skip.
 */
export function useBrowser(): { run: boolean; cleanups: Array<() => Promise<unknown>>; browser(): Browser } {
  const run = hasChromium();
  const cleanups: Array<() => Promise<unknown>> = [];
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (run) browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await browser?.close();
  });
  return {
    run,
    cleanups,
    browser: () => {
      if (!browser) throw new Error('Chromium was not launched (useBrowser().run is false).');
      return browser;
    },
  };
}
