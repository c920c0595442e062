import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROBLEM_CODES } from '../../../src/protocol/problem.js';
import { LIMITS } from '../../../src/service/contract/limits.js';
import { codeTable, endpointTable, limitsTable, priceTable, withContractTables, withTable } from '../../../src/service/contract/tables.js';
import { ROUTES } from '../../../src/service/contract/routes.js';

const doc = readFileSync(fileURLToPath(new URL('../../../docs/service.md', import.meta.url)), 'utf8');

describe('docs/service.md tables made from the contract', () => {
  it('are current: run `npm run docs` when this fails', () => {
    expect(withContractTables(doc) === doc, 'docs/service.md is stale: run npm run docs').toBe(true);
  });

  it('list every contract route once, with its operationId, and every code a route answers with its status', () => {
    const endpoints = endpointTable();
    for (const route of ROUTES) expect(endpoints).toContain(`| \`${route.method} ${route.path}\` | \`${route.operationId}\` |`);
    expect(endpoints.split('\n')).toHaveLength(ROUTES.length + 2);
    const codes = codeTable();
    for (const route of ROUTES) for (const code of route.problems) expect(codes).toContain(`| ${PROBLEM_CODES[code].status} | \`${code}\` |`);
    // Every code cliphook chose where the spec names none says why.
    for (const line of codes.split('\n').filter((l) => l.includes('| cliphook:'))) expect(line).toMatch(/\| cliphook: \S.* \|/);
  });

  it('states the limits of spec 8 from LIMITS, in the spec\'s words (issue 31 item 3)', () => {
    const limits = limitsTable();
    expect(limits).toContain(`| Requests per API key | ${LIMITS.requestsPerWindow} per minute;`);
    expect(limits).toContain(`| \`callback_url\` length (and each \`image_urls\` entry) | ${LIMITS.callbackUrlChars} characters |`);
    expect(limits).toContain(`1-${LIMITS.idempotencyKeyChars} printable ASCII characters; replay window 24 hours`);
    expect(limits).toContain('| Asset file | 20 MB (20,971,520 bytes); jpg, png, webp, gif, heic |');
    expect(limits).toContain(`${LIMITS.imageJobsPerWindow} per 10 minutes`);
    expect(doc).toContain(limits);
  });

  it('states the prices of spec 2.13 from pricing.ts, row by row (issue 31 item 3)', () => {
    const prices = priceTable();
    // The spec's own table: 5/10/15/30 s through the API.
    expect(prices).toContain('| `standard` | 480p | 4-15 s | 2 | 9 | 18 | 27 | n/a |');
    expect(prices).toContain('| `cinema-fullhd` | 1080p | 4-30 s | 15 | 68 | 135 | 203 | 405 |');
    expect(prices).toContain('| image, hd (about 4.2 MP) | 4 | 14 |');
    expect(prices).toContain('| AI character (4 photos) | 5 | — |');
    expect(doc).toContain(prices);
  });

  it('refuses a document without the markers instead of appending a table somewhere', () => {
    expect(() => withTable('# no markers here\n', 'endpoints', 'x')).toThrow(/no <!-- contract:endpoints -->/);
  });
});
