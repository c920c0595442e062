// Issue 31: balances live with the accounts (core/accounts.ts); this name stays for the imports of the
// image and account resources until they name accounts.js.
export { Credits, type Shortfall } from './accounts.js';
