import { lookup as dnsLookup } from 'node:dns';
import { isIP } from 'node:net';
import { classifyAddress } from '../../http/address.js';
import type { LookupFunction } from '../../http/outbound-guard.js';
import { createHttpTransport } from '../../emitter/transport.js';
import { checkCallbackUrl } from '../../emitter/url-guard.js';
import { CliphookError, ReconcileError } from '../../protocol/errors.js';
import { HEADER_DELIVERY, HEADER_EVENT, HEADER_SIGNATURE } from '../../protocol/headers.js';
import { assertSecret, sign } from '../../protocol/signature.js';
import { eventOfClip } from '../../receiver/reconcile.js';
import { deadline } from '../../receiver/reconcile-deadline.js';
import { listTerminalClips } from '../../receiver/reconcile-list.js';
import { resolveReconcileOptions } from '../../receiver/reconcile-options.js';
import { ExitError } from '../errors.js';
import { palette, print } from '../output.js';
import { parseTimeout } from './trigger.js';
import { parseUrl } from '../../http/url.js';

export interface ReconcileCommandOptions {
  /** Required (or CLIPHOOK_API_KEY); checked here so a missing one is a usage error (exit 2). */
  apiKey?: string;
  /** The service's base URL with /v1; required. */
  url?: string;
  /** The webhook URL to deliver to; required. */
  to?: string;
  /** Required (or CLIPHOOK_SECRET). */
  secret?: string;
  since: string;
  /** Per-POST timeout in milliseconds, as given on the command line. */
  timeout: string;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--since`: a duration back from now (`90s`, `90m`, `3h`, `2d`) or an ISO 8601 time. Exit 2 otherwise.
 * @example parseSince('3h', now) // now - 3 hours
 */
export function parseSince(text: string, now: number): number {
  const duration = /^(\d{1,7})([smhd])$/.exec(text.trim());
  if (duration) return now - Number(duration[1]) * UNITS[duration[2]!]!;
  const at = /^\d{4}-\d{2}-\d{2}T/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(at)) throw new ExitError(`--since expects a duration (90m, 3h, 2d) or an ISO 8601 time, got ${JSON.stringify(text)}`, 2);
  if (at > now) throw new ExitError(`--since ${text} is in the future`, 2);
  return at;
}

/**
 * `cliphook reconcile`: lists the account's clips that ended since `--since` through
 * GET /videos and POSTs each one's event, signed as the service signs its webhooks, to `--to`, one after
 * another; the receiver's dedupe drops what it already had. Each event's `X-Service-Delivery` is derived
 * from it (`reconcile:<event>:<clip id>`), so a second run is a duplicate even for a receiver that dedupes
 * by delivery id only. `--to` is guarded as the emitter's callback URLs are (https, no private address),
 * except that a loopback URL (http allowed) is reached for local development. Exit 0 when every event was
 * acknowledged (2xx), 1 when one was not, a list item made no valid event (the others still go out) or the
 * listing failed, 2 for usage errors (a plain-http `--url` off loopback among them).
 */
export async function reconcile(options: ReconcileCommandOptions): Promise<void> {
  const { apiKey, url, to, secret } = options;
  if (!apiKey) throw new ExitError('reconcile needs --api-key <key> (or CLIPHOOK_API_KEY), the account\'s API key', 2);
  if (!url) throw new ExitError('reconcile needs --url <url>, the service\'s base URL with /v1', 2);
  if (!to) throw new ExitError('reconcile needs --to <url>, the webhook URL to deliver to', 2);
  if (!secret) throw new ExitError('reconcile needs --secret <secret> (or CLIPHOOK_SECRET), the signing secret', 2);
  const timeoutMs = parseTimeout(options.timeout);
  let list;
  try {
    assertSecret(secret);
    list = resolveReconcileOptions({ apiKey, baseUrl: url });
  } catch (error) {
    if (error instanceof TypeError || error instanceof CliphookError) throw new ExitError(inCliWords(error.message), 2);
    throw error;
  }
  const { target, loopback } = checkTo(to);
  const since = parseSince(options.since, Date.now());
  let clips;
  // The library's deadlines: each GET within requestTimeout, the whole listing within runTimeout.
  const listing = deadline(list.timers, list.runTimeout, () => new ReconcileError('run_timeout', `The listing took longer than ${list.runTimeout} ms.`));
  try {
    clips = await listTerminalClips({ ...list, since, signal: listing.signal });
  } catch (error) {
    if (error instanceof ReconcileError) throw new ExitError(`reconcile: ${inCliWords(error.message)}`, 1);
    throw error;
  } finally {
    listing.clear();
  }
  const p = palette();
  const transport = createHttpTransport({ allowPrivateNetworks: loopback, maxSockets: 1, lookup: loopback ? loopbackLookup : undefined });
  const counts = { delivered: 0, duplicates: 0, failed: 0, malformed: 0 };
  try {
    for (const clip of clips) {
      let event;
      try {
        event = eventOfClip(clip.item, Date.now());
      } catch (error) {
        // The service listed something that is no event of spec 2.12: said once here, the rest still goes out.
        counts.malformed++;
        const completed = typeof clip.item.completed_at === 'string' ? clip.item.completed_at : '?';
        print(`clip ${clip.id ?? '?'} completed ${completed} ${p.red(`malformed: ${(error as Error).message}`)} skipped`);
        continue;
      }
      const body = JSON.stringify(event);
      const deliveryId = `reconcile:${event.event}:${event.id}`;
      const headers = { 'content-type': 'application/json', [HEADER_EVENT]: event.event, [HEADER_SIGNATURE]: sign(body, secret), [HEADER_DELIVERY]: deliveryId };
      let outcome: string;
      try {
        const reply = await transport({ url: target, headers, body: Buffer.from(body), signal: AbortSignal.timeout(timeoutMs) });
        if (reply.status >= 200 && reply.status < 300) {
          const duplicate = /"duplicate"\s*:\s*true/.test(reply.body.toString('utf8'));
          counts[duplicate ? 'duplicates' : 'delivered']++;
          outcome = duplicate ? p.dim(`[${reply.status}] duplicate`) : p.green(`[${reply.status}] delivered`);
        } else {
          counts.failed++;
          outcome = p.red(`[${reply.status}] failed`);
        }
      } catch (error) {
        counts.failed++;
        outcome = p.red(`failed: ${(error as Error).message}`);
      }
      print(`${p.cyan(event.event)} ${event.id} completed ${event.completed_at ?? '?'} [${deliveryId}] ${outcome}`);
    }
  } finally {
    transport.close();
  }
  const malformed = counts.malformed > 0 ? `, ${counts.malformed} malformed` : '';
  print(`${clips.length} clips ended since ${new Date(since).toISOString()}: ${counts.delivered} delivered, ${counts.duplicates} duplicates, ${counts.failed} failed${malformed}`);
  const failures: string[] = [];
  if (counts.failed > 0) failures.push(`${counts.failed} of ${clips.length - counts.malformed} events were not acknowledged by ${target.href}`);
  if (counts.malformed > 0) failures.push(`${counts.malformed} of ${clips.length} clips made no valid event (the service's list items; see the lines above)`);
  if (failures.length > 0) throw new ExitError(failures.join('; '), 1);
}

/** The library's option names as the command's flags. */
function inCliWords(message: string): string {
  return message.replaceAll('`baseUrl`', '--url');
}

/**
 * `--to` through the emitter's callback guard, with the command's own rule in the message: the guard's
 * way out, `allowPrivateNetworks`, is no flag of this command.
 */
function checkTo(to: string): { target: URL; loopback: boolean } {
  const loopback = isLoopback(to);
  try {
    return { target: checkCallbackUrl(to, { allowPrivateNetworks: loopback }), loopback };
  } catch (error) {
    if (!(error instanceof CliphookError)) throw error;
    const why = error.message
      .replace(/^The callback URL/, '--to')
      .replace(/ \(http only with `allowPrivateNetworks`\)/, '')
      .replace(/; allow it with `allowPrivateNetworks`\.$/, '.');
    throw new ExitError(`${why} reconcile delivers to an https URL on a public address, or to localhost or a loopback address (http allowed there).`, 2);
  }
}

/** `localhost` or a literal loopback address: reached over http for local development (docs/cli.md). */
function isLoopback(url: string): boolean {
  const host = parseUrl(url)?.hostname;
  if (host === undefined) return false;
  if (host === 'localhost') return true;
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  return isIP(bare) !== 0 && classifyAddress(bare) === 'loopback';
}

/** For a loopback `--to`: a name must resolve to loopback addresses only. */
const loopbackLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, options.all ? [] : '');
    const bad = addresses.find(({ address }) => classifyAddress(address) !== 'loopback');
    if (bad || addresses.length === 0) return callback(Object.assign(new Error(`${hostname} resolves to ${bad?.address ?? 'nothing'}, not a loopback address`), { code: 'ENOTFOUND' }), options.all ? [] : '');
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};
