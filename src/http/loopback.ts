/**
 * Whether a host name or address reaches this machine only: `localhost` and `*.localhost` (RFC 6761),
 * 127.0.0.0/8 (also IPv4-mapped, `::ffff:127.0.0.1`) and `::1`, bracketed or not. What the relay, `serve`
 * and the service's callback and origin checks accept as local.
 * @example isLoopbackHost('[::1]') // true
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}
