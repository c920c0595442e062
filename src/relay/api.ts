import { RelayError } from '../protocol/errors.js';
import type { ChannelInfo } from './server.js';
import { httpUrl } from './validate.js';

export interface CreateChannelOptions {
  /** The relay's admin token, when it guards channel creation. */
  adminToken?: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

/**
 * Creates a channel on a relay (`POST /channels`). Keep the token: it is shown once. Throws `RelayError`:
 * `relay_unreachable` (no HTTP answer), `admin_token_required` (none given), `invalid_token` (a wrong
 * admin token), `relay_refused` (any other answer).
 * @example
 * const { channel, url, token } = await createChannel('https://relay.example.com');
 * // give `url` to the service as callback_url; give channel + token to connectListener
 */
export async function createChannel(relayUrl: string, { adminToken, fetch: fetchImpl = globalThis.fetch }: CreateChannelOptions = {}): Promise<ChannelInfo> {
  const base = httpUrl('relayUrl', relayUrl);
  const headers: Record<string, string> = adminToken ? { authorization: `Bearer ${adminToken}` } : {};
  let res: Response;
  try {
    res = await fetchImpl(new URL('channels', base.href.replace(/\/*$/, '/')), { method: 'POST', headers });
  } catch (error) {
    // fetch's own `TypeError: fetch failed` hides the reason in `cause` (ECONNREFUSED, ENOTFOUND, …).
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (error as Error).message;
    throw new RelayError('relay_unreachable', `Cannot reach the relay at ${base.origin}: ${why}.`);
  }
  if (res.status === 401) {
    await res.body?.cancel();
    if (adminToken) throw new RelayError('invalid_token', 'The relay refused to create a channel: the admin token is wrong.', 401);
    throw new RelayError('admin_token_required', 'The relay refused to create a channel: it needs its admin token.', 401);
  }
  if (res.status !== 201) {
    await res.body?.cancel();
    throw new RelayError('relay_refused', `The relay answered POST /channels with HTTP ${res.status}.`, res.status);
  }
  const info = (await res.json().catch(() => null)) as ChannelInfo | null;
  if (typeof info?.channel !== 'string' || typeof info.token !== 'string' || typeof info.url !== 'string') {
    throw new RelayError('relay_refused', 'The relay answered POST /channels with an unexpected body.', res.status);
  }
  return info;
}
