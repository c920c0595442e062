import { openApiDocument } from '../../service/contract/openapi.js';
import { faultClosedLists } from '../../service/testing/fault-check.js';
import { ExitError } from '../errors.js';
import { httpUrlOf } from '../../http/url.js';

export interface OpenApiCommandOptions {
  /** The server URL the document names. */
  origin: string;
}

/** `cliphook openapi > openapi.json`: the service's OpenAPI 3.1 document, as GET /v1/openapi.json serves it. */
export function openapi(options: OpenApiCommandOptions, out: (text: string) => void = (text) => process.stdout.write(text)): void {
  const origin = options.origin.replace(/\/+$/, '');
  if (!httpUrlOf(origin)) throw new ExitError(`--origin must be an http(s) URL, got ${JSON.stringify(options.origin)}.`, 2);
  out(`${JSON.stringify(openApiDocument({ origin, closedLists: faultClosedLists() }), null, 2)}\n`);
}
