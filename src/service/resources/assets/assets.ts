import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { onTimeOf, type LaneClock } from '../../core/clock.js';
import type { ServiceStore, Table, TableIndex } from '../../core/store.js';
import type { Speed } from '../../core/simulate.js';
import type { AssetStatus } from '../../contract/assets.js';
import type { SubjectConsent } from '../../contract/common.js';
import { LIMITS } from '../../contract/limits.js';

/** Spec 3.2. */
export type { AssetStatus };

/** A reference photo as the service keeps it; the file itself is stored once per sha256. */
export interface Asset {
  id: number;
  accountId: number;
  sha256: string;
  /** The client's file name. */
  name: string;
  fileSize: number;
  mimeType: string;
  ext: string;
  status: AssetStatus;
  subjectConsent: SubjectConsent | null;
  /** Unguessable part of the asset's public_url. */
  token: string;
  createdAt: number;
  /** When moderation ends and how, fixed at upload so a restart resumes it. */
  moderation: { at: number; outcome: 'trusted' | 'rejected' };
  /** Why moderation rejected it, once rejected. */
  reasonCode: string | null;
  /** Set for AI character photos made by the service (spec 2.7 `trusted_until`): usable as references until then. */
  trustedUntil: number | null;
}

export interface AssetTables {
  asset: Asset;
}


/** Spec 3.2 and 8: moderation takes 5-60 s; `--speed fast` compresses it to a second or two. */
const MODERATION_MS: Record<Speed, [number, number]> = { fast: [500, 2_000], realistic: [...LIMITS.assetModerationMs] };

/**
 * `simulate` form field of POST /assets: `rejected[:<reason>]` ends moderation rejected,
 * `moderation_rejected[:<reason>]` refuses the upload at once with 422.
 */
export function parseAssetSimulation(value: string | undefined): { kind: 'rejected' | 'moderation_rejected'; reason: string } | null {
  const match = /^(rejected|moderation_rejected)(?::([a-z_]{1,40}))?$/.exec(value ?? '');
  if (!match) return null;
  return { kind: match[1] as 'rejected' | 'moderation_rejected', reason: match[2] ?? 'explicit_content' };
}

export interface AssetEvents {
  /** An asset's moderation ended: trusted or rejected. */
  moderated: [asset: Asset];
}

/**
 * The asset state machine of spec 3.2: uploaded pending, then trusted or rejected when its planned
 * moderation ends on the simulated clock; the same bytes from the same account are the same asset
 * (`deduped`). `resume()` re-arms moderations in flight after a restart.
 */
export class Assets extends EventEmitter<AssetEvents> {
  readonly #assets: Table<Asset>;
  readonly #store: ServiceStore<AssetTables>;
  readonly #clock: LaneClock;
  readonly #speed: Speed;
  readonly #random: () => number;
  readonly #timers = new Map<number, unknown>();
  readonly #onError: (error: Error) => void;
  // Indexes of the asset table, which keeps them in step, so no lookup reads every account's assets.
  /** public_url tokens to assets: the public file route looks here on every request. */
  readonly #byToken: TableIndex<Asset, string>;
  /** Assets by their bytes: an upload's dedupe and whether a stored file is still used. */
  readonly #bySha256: TableIndex<Asset, string>;
  readonly #byAccount: TableIndex<Asset, number>;

  constructor(options: {
    store: ServiceStore<AssetTables>;
    clock: LaneClock;
    speed: Speed;
    random?: () => number;
    onError?: (error: Error) => void;
  }) {
    super();
    this.#store = options.store;
    this.#assets = options.store.table('asset');
    this.#clock = options.clock;
    this.#speed = options.speed;
    this.#random = options.random ?? Math.random;
    this.#onError = options.onError ?? (() => undefined);
    this.#byToken = this.#assets.index('token', (asset) => asset.token);
    this.#bySha256 = this.#assets.index('sha256', (asset) => asset.sha256);
    this.#byAccount = this.#assets.index('accountId', (asset) => asset.accountId);
    // An asset removed beside it (its account deleted, its upload taken back) takes its moderation timer with it.
    this.#assets.watch('timers', (id, row) => row === null && this.#disarm(id));
  }

  /** The caller's asset `id`, or undefined: another account's asset does not exist for it (spec 7: 404). */
  get(accountId: number, id: number): Asset | undefined {
    const asset = this.#assets.get(id);
    return asset && asset.accountId === accountId ? asset : undefined;
  }

  /** The asset behind a public_url token. */
  byToken(token: string): Asset | undefined {
    return this.#byToken.first(token);
  }

  /** The account's asset with these bytes, if any: what `add` dedupes to. */
  find(accountId: number, sha256: string): Asset | undefined {
    return this.#bySha256.get(sha256).find((asset) => asset.accountId === accountId);
  }

  /** Whether any asset still uses the stored file `sha256` (so it may be removed from disk when none does). */
  fileInUse(sha256: string): boolean {
    return this.#bySha256.has(sha256);
  }

  /** The account's trusted assets, newest first (spec 4.13: the list holds trusted image assets only). */
  listTrusted(accountId: number): Asset[] {
    return this.#byAccount.get(accountId).filter((asset) => asset.status === 'trusted').sort((a, b) => b.id - a.id);
  }

  /**
   * Adds an uploaded file, or returns the account's asset with the same bytes (`deduped`), recording the
   * consent this upload gives when it gives one (the latest word on those photos). A new asset is pending
   * until its planned moderation ends.
   */
  add(input: { accountId: number; sha256: string; name: string; fileSize: number; mimeType: string; ext: string; subjectConsent: SubjectConsent | null; rejectAs?: string }): { asset: Asset; deduped: boolean } {
    const same = this.find(input.accountId, input.sha256);
    if (same) {
      if (input.subjectConsent !== null && same.subjectConsent !== input.subjectConsent) {
        same.subjectConsent = input.subjectConsent;
        this.#assets.put(same);
      }
      return { asset: same, deduped: true };
    }
    const now = this.#clock.now();
    const [low, high] = MODERATION_MS[this.#speed];
    const { rejectAs, ...fields } = input;
    const asset = this.#assets.put({
      ...fields,
      id: this.#store.nextId('asset'),
      status: 'pending',
      token: randomBytes(16).toString('base64url'),
      createdAt: now,
      moderation: { at: now + Math.round(low + (high - low) * this.#random()), outcome: rejectAs ? 'rejected' : 'trusted' },
      reasonCode: rejectAs ?? null,
      trustedUntil: null,
    });
    this.#arm(asset);
    return { asset, deduped: false };
  }

  /** Adds a photo the service made itself (an AI character): trusted at once, until `trustedUntil`. */
  addTrusted(input: { accountId: number; sha256: string; name: string; fileSize: number; mimeType: string; ext: string; trustedUntil: number | null }): Asset {
    const now = this.#clock.now();
    const asset = this.#assets.put({
      ...input,
      id: this.#store.nextId('asset'),
      status: 'trusted',
      subjectConsent: 'no_real_person',
      token: randomBytes(16).toString('base64url'),
      createdAt: now,
      moderation: { at: now, outcome: 'trusted' },
      reasonCode: null,
    });
    return asset;
  }

  /** Whether `asset` may be used as a reference now: trusted, and not past a character's 30 days. */
  usable(asset: Asset): boolean {
    return asset.status === 'trusted' && (asset.trustedUntil === null || this.#clock.now() < asset.trustedUntil);
  }

  remove(asset: Asset): void {
    this.#disarm(asset.id);
    this.#assets.remove(asset.id);
  }

  /** Re-arms the moderations that were running when the service stopped. */
  resume(): void {
    for (const asset of this.#assets.values()) if (asset.status === 'pending') this.#arm(asset);
  }

  stop(): void {
    for (const id of [...this.#timers.keys()]) this.#disarm(id);
  }

  /** Brings the moderation timers back in line with the rows, after a request's changes were taken back (the indexes are the table's). */
  resync(): void {
    for (const id of [...this.#timers.keys()]) if (this.#assets.get(id)?.status !== 'pending') this.#disarm(id);
    this.resume();
  }

  #arm(asset: Asset): void {
    onTimeOf(this.#clock, asset.accountId, () => this.#armNow(asset));
  }

  #armNow(asset: Asset): void {
    this.#disarm(asset.id);
    const timer = this.#clock.setTimeout(() => {
      this.#timers.delete(asset.id);
      if (this.#assets.get(asset.id) !== asset) return;
      asset.status = asset.moderation.outcome;
      if (asset.status === 'trusted') asset.reasonCode = null;
      this.#assets.put(asset);
      this.#store.commit().catch(this.#onError);
      this.emit('moderated', asset);
    }, Math.max(0, asset.moderation.at - this.#clock.now()));
    this.#timers.set(asset.id, timer);
  }

  #disarm(id: number): void {
    const timer = this.#timers.get(id);
    if (timer !== undefined) this.#clock.clearTimeout(timer);
    this.#timers.delete(id);
  }
}
