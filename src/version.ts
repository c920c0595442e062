import { readFileSync } from 'node:fs';

/** The package root, found from this file in both src/ (tests) and dist/ (installed). */
export const packageRoot = new URL('../', import.meta.url);

/** This package's version, for `--version` and the emitter's User-Agent. */
export const version: string = (JSON.parse(readFileSync(new URL('package.json', packageRoot), 'utf8')) as { version: string }).version;
