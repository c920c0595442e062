// `npm run docs`: writes the tables docs/service.md takes from the contract (its endpoints, its problem codes, its
// limits and its prices) between their markers. test/service/contract/docs.test.ts fails when they are stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withContractTables } from '../src/service/contract/tables.js';

const file = fileURLToPath(new URL('../docs/service.md', import.meta.url));
const before = readFileSync(file, 'utf8');
const after = withContractTables(before);
if (after === before) console.log('docs/service.md: its contract tables are current');
else {
  writeFileSync(file, after);
  console.log('docs/service.md: contract tables written');
}
