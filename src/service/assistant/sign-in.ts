import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/server';
import { ServiceError } from '../contract/problems.js';
import type { Identified } from '../core/gate.js';
import { AssistantConnections, type AssistantRow } from './connections.js';
import type { SignInParts } from './parts.js';
import { ConsentPage } from './oauth/consent.js';
import { MCP_SCOPE } from './oauth/paths.js';
import { createOAuthServer, type OAuthServer } from './oauth/provider.js';

/** RFC 9728's document for the assistant endpoint, at its path-inserted well-known URL (section 3.1). */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource/mcp';
/**
 * The bare well-known URL names the resource `{origin}` itself, which is not protected by OAuth here: a
 * document there claiming `{origin}/mcp` is one RFC 9728 section 3.3 tells clients to reject.
 */
export const ROOT_PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

/**
 * How an assistant signs in to `/mcp` (spec 5.7): the bearer API key, or an OAuth access token the
 * account holder approved. Either way the caller carries its assistant connection, whose daily limit
 * and running clips the spending rules count. The authorization server is made on first use, with the
 * service's origin (known once it listens) as issuer.
 */
export class AssistantSignIn {
  readonly connections: AssistantConnections;
  readonly consent: ConsentPage;
  readonly #parts: SignInParts;
  readonly #mcpPath: string;
  readonly #fetch: typeof fetch | undefined;
  #oauth: { issuer: string; server: Promise<OAuthServer> } | null = null;

  constructor(parts: SignInParts, { mcpPath, fetchClientMetadata }: { mcpPath: string; fetchClientMetadata?: typeof fetch | undefined }) {
    this.#parts = parts;
    this.#mcpPath = mcpPath;
    this.#fetch = fetchClientMetadata;
    this.connections = new AssistantConnections(parts.store as never, () => parts.clock.now());
    this.consent = new ConsentPage(parts, () => this.oauth(), this.connections);
  }

  /** The protected resource every token is bound to: `{origin}/mcp`. */
  get resource(): string {
    return `${this.#parts.origin}${this.#mcpPath}`;
  }

  /** The authorization server, made on first use and again when the origin changed. */
  oauth(): Promise<OAuthServer> {
    const issuer = this.#parts.origin;
    if (this.#oauth?.issuer !== issuer) {
      const server = createOAuthServer({
        store: this.#parts.store as never,
        issuer,
        resource: this.resource,
        accountExists: (id) => /^\d+$/.test(id) && this.#parts.accounts.get(Number(id)) !== undefined,
        fetch: this.#fetch,
        clientInUse: (clientId) => this.connections.hasLive(clientId),
        approvedBy: (accountId, clientId) => this.connections.hasLive(clientId, Number(accountId)),
        // A grant the library revoked (refresh token reuse) ends its connection, as a disconnect does.
        grantRevoked: async (grantId) => {
          const row = this.connections.forGrant(grantId);
          if (row) await this.disconnect(row);
        },
        warn: (message) => this.#parts.warn(message),
      });
      this.#oauth = { issuer, server };
      // A failed start (the library missing) is tried again by the next request.
      server.catch(() => this.#oauth?.server === server && (this.#oauth = null));
    }
    return this.#oauth.server;
  }

  /** RFC 9728 protected resource metadata of `/mcp`. */
  protectedResourceMetadata(): Record<string, unknown> {
    return {
      resource: this.resource,
      authorization_servers: [this.#parts.origin],
      scopes_supported: [MCP_SCOPE],
      bearer_methods_supported: ['header'],
      resource_name: 'cliphook assistant endpoint',
    };
  }

  /**
   * Who an OAuth access token in `authorization` names, with its assistant connection: the bearer credential
   * of a request to `/mcp` that is no API key (those the gate of `/v1` looks up first, endpoint.ts). With the
   * client's `address`, a token that is not valid either counts against it, or is refused (429) once the
   * address failed too often; a valid one never is, so a stranger's guesses cannot lock its holder out.
   */
  async byToken(authorization: string | undefined, address: string | undefined): Promise<Identified> {
    const { gate, accounts, clock } = this.#parts;
    const token = /^Bearer +(\S+) *$/i.exec(authorization ?? '')![1]!;
    const found = await (await this.oauth()).provider.AccessToken.find(token).catch(() => undefined);
    const audiences = found ? [found.aud].flat() : [];
    if (!found || found.isExpired || !audiences.includes(this.resource)) {
      // Only a credential found invalid meets the failure limit, so others' guesses never lock a valid one out.
      gate.guessed(address);
      throw new ServiceError('invalid_api_key', 'This bearer token is not an API key, nor an OAuth access token for this endpoint (it may have expired: refresh it).');
    }
    // The token must carry the endpoint's scope (RFC 6750 §3.1): a token of `scope=""` grants no access to it.
    if (!found.scopes.has(MCP_SCOPE)) throw new ServiceError('insufficient_scope', `This access token does not carry the ${MCP_SCOPE} scope; sign in again asking for scope=${MCP_SCOPE}.`);
    const assistant = found.grantId ? this.connections.forGrant(found.grantId) : undefined;
    const account = assistant ? accounts.get(assistant.accountId) : undefined;
    if (!assistant || !account || String(account.id) !== found.accountId) throw new ServiceError('invalid_api_key', 'This assistant was disconnected in the account settings. Sign in again.');
    const key = accounts.withLiveKey(account.id)?.key;
    if (!key) throw new ServiceError('invalid_api_key', 'The account has no live API key for the assistant to act with; create one in the account settings.');
    // The account's own time from here on, as the gate does for a key: its daily limit, waits and rate window.
    clock.actFor(account.id);
    return { account, key, limitName: `assistant:${assistant.id}`, assistant };
  }

  /**
   * The `WWW-Authenticate` challenge of a refusal at `/mcp` (RFC 6750 §3, RFC 9728 §5.1): it points to the
   * protected resource metadata and the scope to ask for, so a client can sign in from the 401 alone.
   */
  challenge(code: string): string | null {
    // The SDK's own derivation (RFC 9728 section 3.1, path-inserted), the one its clients compute too.
    const hint = `, resource_metadata="${getOAuthProtectedResourceMetadataUrl(new URL(this.resource))}", scope="${MCP_SCOPE}"`;
    if (code === 'invalid_auth_header') return `Bearer realm="cliphook"${hint}`;
    if (code === 'invalid_api_key') return `Bearer realm="cliphook", error="invalid_token"${hint}`;
    if (code === 'insufficient_scope') return `Bearer realm="cliphook", error="insufficient_scope"${hint}`;
    return null;
  }

  /** Ends a connection: its tokens and grant are revoked at once, and its next request is a 401. */
  async disconnect(row: AssistantRow): Promise<AssistantRow> {
    if (row.grantId) {
      const oauth = await this.oauth();
      oauth.adapters.revokeGrant(row.grantId);
      const grant = await oauth.provider.Grant.find(row.grantId).catch(() => undefined);
      await grant?.destroy();
    }
    return this.connections.disconnect(row);
  }
}
