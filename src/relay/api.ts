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
 * Creates a channel on a relay (`POST /channels`). Keep the token: it is shown once.
 * @example
 * const { channel, url, token } = await createChannel('https://relay.example.com');
 * // give `url` to the service as callback_url; give channel + token to connectListener
 */
export async function createChannel(relayUrl: string, { adminToken, fetch: fetchImpl = globalThis.fetch }: CreateChannelOptions = {}): Promise<ChannelInfo> {
  const base = httpUrl('relayUrl', relayUrl);
  const headers: Record<string, string> = adminToken ? { authorization: `Bearer ${adminToken}` } : {};
  const res = await fetchImpl(new URL('channels', base.href.replace(/\/*$/, '/')), { method: 'POST', headers });
  if (res.status === 401) throw new RelayError('admin_token_required', 'The relay refused to create a channel: it needs its admin token.', 401);
  if (res.status !== 201) throw new RelayError('relay_refused', `The relay answered POST /channels with HTTP ${res.status}.`, res.status);
  const info = (await res.json()) as ChannelInfo;
  if (typeof info?.channel !== 'string' || typeof info.token !== 'string' || typeof info.url !== 'string') {
    throw new RelayError('relay_refused', 'The relay answered POST /channels with an unexpected body.', res.status);
  }
  return info;
}
