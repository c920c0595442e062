// The authorization server's paths, scope and lifetimes: what the routes need, without loading oidc-provider.

/** The OAuth paths at the service's origin (the authorization server's issuer is the origin itself). */
export const OAUTH_PATHS = Object.freeze({
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  /** The page where the account holder signs in and approves the assistant: `/oauth/consent/<uid>`. */
  consent: '/oauth/consent',
  /** RFC 8414 and OpenID discovery, both served from the library's one metadata document. */
  serverMetadata: '/.well-known/oauth-authorization-server',
  openidConfiguration: '/.well-known/openid-configuration',
});

/** The one scope the assistant endpoint grants: use the account's tools, within the connection's daily limit. */
export const MCP_SCOPE = 'mcp';

/**
 * Lifetimes, in seconds. An access token lasts an hour; the refresh token keeps the connection for 30 days of
 * disuse; a refresh token just rotated away is still taken for `rotatedRefreshGrace` (requests sent in parallel).
 */
export const OAUTH_TTL = Object.freeze({ accessToken: 3_600, rotatedRefreshGrace: 30, authorizationCode: 60, interaction: 600, refreshToken: 30 * 86_400, session: 14 * 86_400, grant: 365 * 86_400 });

/**
 * The first segments of the authorization server's paths (`oauth`, `.well-known`; each path has a second),
 * made once from the table above: a request under any other (`/v1/…`, `/mcp`) is no OAuth path, unasked.
 */
export const OAUTH_ROOTS: ReadonlySet<string> = new Set(Object.values(OAUTH_PATHS).map((path) => path.split('/')[1]!));

/** Whether the authorization server answers `path` (its endpoints and metadata; not the consent page, which the service serves). */
export function isOAuthPath(path: string): boolean {
  if (path === OAUTH_PATHS.serverMetadata || path === OAUTH_PATHS.openidConfiguration) return true;
  return path.startsWith('/oauth/') && !path.startsWith(`${OAUTH_PATHS.consent}/`);
}
