import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { ServiceStore, Table, TableIndex } from '../../core/store.js';
import { OAUTH_TTL } from './paths.js';

/** One record of the authorization server (a client, a grant, a code, a token, a session…), as kept in the data file. */
export interface OAuthRow {
  /** `<Model>:<id>`, e.g. `AccessToken:V1StGXR8…`. */
  id: string;
  payload: AdapterPayload;
  /** When it ends, in wall-clock ms (the library's tokens follow real time), or null for never. */
  expiresAt: number | null;
}

export type OAuthTables = { oauth: OAuthRow };

/** The models whose records belong to a grant, so a disconnect (`revokeByGrantId`) ends them all. */
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

/** Writes between two sweeps of expired records. */
const SWEEP_EVERY = 200;

/** Dynamically registered clients kept at most: registration is open to strangers, so it is bounded. */
export const MAX_REGISTERED_CLIENTS = 500;

/**
 * Sign-ins in progress (`Interaction`) kept at most. Anyone may start one with a GET, so they live in
 * memory only, never in the data file, and the oldest is dropped first: a sign-in lost to a restart or
 * to a flood is simply started again.
 */
export const MAX_INTERACTIONS = 1_000;

/** A registered client younger than this (a sign-in's lifetime) is never dropped to make room. */
const CLIENT_GRACE_MS = 10 * 60_000;

/** Models kept in memory only (see MAX_INTERACTIONS). */
const MEMORY_MODELS = new Set(['Interaction']);

/** A record's model: `AccessToken` of `AccessToken:V1St…`. */
const modelOf = (row: OAuthRow): string => row.id.slice(0, row.id.indexOf(':'));

/** What the indexes read of a record's payload. */
type Keyed = { grantId?: string; uid?: string; userCode?: string };

/**
 * oidc-provider's storage on the service's own store: every record in one table of the data file, so a
 * connected assistant's tokens survive `serve` restarting. Lookups by grant, session uid and user code,
 * and the registered clients, are indexes of that table (kept in step by the table, so a
 * disconnect taken back with its unit of work leaves them right). Records past `expiresAt` are treated as
 * absent and swept as they are met.
 */
export class StoreAdapterFactory {
  readonly #table: Table<OAuthRow>;
  readonly #store: ServiceStore<OAuthTables>;
  /** The codes and tokens of each grant: what a disconnect revokes. */
  readonly #byGrant: TableIndex<OAuthRow, string>;
  readonly #byUid: TableIndex<OAuthRow, string>;
  readonly #byUserCode: TableIndex<OAuthRow, string>;
  /** The registered clients, oldest first: what making room reads, never the tokens. */
  readonly #clients: TableIndex<OAuthRow, 'client'>;
  readonly #now: () => number;
  readonly #inUse: (clientId: string) => boolean;
  readonly #grantRevoked: (grantId: string) => Promise<void>;
  /** Grants whose connection is being ended (`revokeByGrantId` comes once per model, concurrently). */
  readonly #revoking = new Set<string>();
  readonly #memory = new Map<string, OAuthRow>();
  readonly #opened = new Set<string>();
  /** Wrong API keys sent on each sign-in's consent page: kept with the sign-in, and gone with it. */
  readonly #failures = new Map<string, number>();
  #writes = 0;

  /**
   * `clientInUse` says whether a registered client has a live connection (an approved assistant): those are
   * never evicted. `grantRevoked` is told of a grant the library revoked itself (`revokeByGrantId`).
   */
  constructor(
    store: ServiceStore<OAuthTables>,
    { now = Date.now, clientInUse = () => false, grantRevoked = async () => undefined }: { now?: () => number; clientInUse?: (clientId: string) => boolean; grantRevoked?: ((grantId: string) => Promise<void>) | undefined } = {},
  ) {
    this.#store = store;
    this.#table = store.table('oauth');
    this.#now = now;
    this.#inUse = clientInUse;
    this.#grantRevoked = grantRevoked;
    this.#byGrant = this.#table.index('grant', (row) => (GRANTABLE.has(modelOf(row)) ? (row.payload as Keyed).grantId || undefined : undefined));
    this.#byUid = this.#table.index('uid', (row) => (modelOf(row) === 'Session' ? (row.payload as Keyed).uid || undefined : undefined));
    this.#byUserCode = this.#table.index('userCode', (row) => (row.payload as Keyed).userCode || undefined);
    this.#clients = this.#table.index('client', (row) => (modelOf(row) === 'Client' ? 'client' : undefined));
  }

  /** The adapter of one model, as oidc-provider's `adapter` option asks. */
  adapter = (model: string): Adapter => {
    const key = (id: string) => `${model}:${id}`;
    if (MEMORY_MODELS.has(model)) return this.#memoryAdapter(model);
    return {
      upsert: async (id, payload, expiresIn) => {
        if (model === 'Client' && !this.#table.get(key(id))) this.#makeRoomForClient();
        if (++this.#writes % SWEEP_EVERY === 0) this.sweep();
        this.#table.put({ id: key(id), payload, expiresAt: typeof expiresIn === 'number' ? this.#now() + expiresIn * 1000 : null });
        await this.#store.commit();
      },
      find: async (id) => {
        const payload = this.#live(key(id))?.payload;
        // A refresh token rotated away moments ago is taken again (the SDK 1.x refreshes once per
        // request that met a 401, all with the same token); later, the library sees it used and revokes the grant.
        if (model === 'RefreshToken' && typeof payload?.consumed === 'number' && this.#now() < (payload.consumed + OAUTH_TTL.rotatedRefreshGrace) * 1000) {
          const { consumed: _consumed, ...unused } = payload;
          return unused;
        }
        return payload;
      },
      findByUid: async (uid) => {
        const row = this.#byUid.first(uid);
        return row === undefined ? undefined : this.#live(row.id)?.payload;
      },
      findByUserCode: async (userCode) => {
        const row = this.#byUserCode.first(userCode);
        return row === undefined ? undefined : this.#live(row.id)?.payload;
      },
      consume: async (id) => {
        const row = this.#live(key(id));
        if (!row) return;
        // The first use stands: taking a token again within its grace period does not extend that period.
        this.#table.put({ ...row, payload: { ...row.payload, consumed: row.payload.consumed ?? Math.floor(this.#now() / 1000) } });
        await this.#store.commit();
      },
      destroy: async (id) => {
        if (this.#table.remove(key(id))) await this.#store.commit();
      },
      revokeByGrantId: async (grantId) => {
        if (this.revokeGrant(grantId)) await this.#store.commit();
        // The library revoked the grant itself (a refresh token used twice): its
        // connection is disconnected as by the settings, not left listed live without tokens. Once per grant:
        // the library calls this for each of its models at once.
        if (this.#revoking.has(grantId)) return;
        this.#revoking.add(grantId);
        try {
          await this.#grantRevoked(grantId);
        } finally {
          this.#revoking.delete(grantId);
        }
      },
    };
  };

  /** Sign-ins in progress: in memory, bounded, oldest dropped first. */
  #memoryAdapter(model: string): Adapter {
    const key = (id: string) => `${model}:${id}`;
    const live = (id: string) => {
      const row = this.#memory.get(key(id));
      if (row && row.expiresAt !== null && row.expiresAt <= this.#now()) this.#forget(key(id));
      return this.#memory.get(key(id));
    };
    return {
      upsert: async (id, payload, expiresIn) => {
        const opened = this.#opened.has(key(id));
        this.#memory.delete(key(id));
        while (this.#memory.size >= MAX_INTERACTIONS) this.#dropInteraction();
        this.#memory.set(key(id), { id: key(id), payload, expiresAt: typeof expiresIn === 'number' ? this.#now() + expiresIn * 1000 : null });
        if (opened) this.#opened.add(key(id));
      },
      find: async (id) => live(id)?.payload,
      findByUid: async () => undefined,
      findByUserCode: async () => undefined,
      consume: async (id) => {
        const row = live(id);
        if (row) row.payload = { ...row.payload, consumed: Math.floor(this.#now() / 1000) };
      },
      destroy: async (id) => this.#forget(key(id)),
      revokeByGrantId: async () => undefined,
    };
  }

  /**
   * Counts one wrong API key on a sign-in's consent page and returns how many it has had: counted on the
   * sign-in itself, so it cannot be reset by not following a redirect. 0 once it is gone.
   */
  recordFailure(uid: string): number {
    const id = `Interaction:${uid}`;
    if (!this.#memory.has(id)) return 0;
    const count = (this.#failures.get(id) ?? 0) + 1;
    this.#failures.set(id, count);
    return count;
  }

  #forget(id: string): void {
    this.#memory.delete(id);
    this.#opened.delete(id);
    this.#failures.delete(id);
  }

  /** Marks a sign-in whose consent page a person opened: a flood of new sign-ins drops the others first. */
  markOpened(uid: string): void {
    if (this.#memory.has(`Interaction:${uid}`)) this.#opened.add(`Interaction:${uid}`);
  }

  /** Drops the oldest sign-in nobody has opened, or, when every one is open, the oldest. */
  #dropInteraction(): void {
    let victim: string | undefined;
    for (const id of this.#memory.keys()) {
      if (!this.#opened.has(id)) {
        victim = id;
        break;
      }
    }
    victim ??= this.#memory.keys().next().value!;
    this.#forget(victim);
  }

  /**
   * Keeps registrations under MAX_REGISTERED_CLIENTS: when full, the oldest client no approved assistant
   * uses is dropped (MCP clients often register again on each connect). When every one is in use, the
   * registration fails.
   */
  #makeRoomForClient(): void {
    if (this.clientCount() < MAX_REGISTERED_CLIENTS) return;
    // A client registered within a sign-in's lifetime may have a person on its consent page right now.
    const youngSince = Math.floor((this.#now() - CLIENT_GRACE_MS) / 1000);
    for (const row of this.#clients.get('client')) {
      if (this.#inUse(row.id.slice('Client:'.length))) continue;
      if (Number((row.payload as { client_id_issued_at?: number }).client_id_issued_at ?? 0) > youngSince) continue;
      this.#table.remove(row.id);
      return;
    }
    throw new Error(`All ${MAX_REGISTERED_CLIENTS} registered clients are in use by connected assistants or were registered in the last ${CLIENT_GRACE_MS / 60_000} minutes; try again later.`);
  }

  /** Removes every code and token of a grant; true when something was removed (not yet committed). */
  revokeGrant(grantId: string): boolean {
    let removed = false;
    for (const row of this.#byGrant.get(grantId)) removed = this.#table.remove(row.id) || removed;
    return removed;
  }

  /** Removes every record past its end (sign-ins never finished, spent codes, old tokens); run every few hundred writes. */
  sweep(): number {
    const now = this.#now();
    let removed = 0;
    for (const row of [...this.#table.values()]) if (row.expiresAt !== null && row.expiresAt <= now && this.#table.remove(row.id)) removed++;
    return removed;
  }

  /** Clients registered (dynamically) and still kept. */
  clientCount(): number {
    return this.#clients.count('client');
  }

  #live(id: string): OAuthRow | undefined {
    const row = this.#table.get(id);
    if (!row) return undefined;
    if (row.expiresAt !== null && row.expiresAt <= this.#now()) {
      this.#table.remove(id);
      void this.#store.commit();
      return undefined;
    }
    return row;
  }
}
