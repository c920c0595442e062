import { describe, expect, it, vi } from 'vitest';
import { Assets, parseAssetSimulation, type AssetTables } from '../../../../src/service/resources/assets/assets.js';
import { SimulatedClock } from '../../../../src/service/core/clock.js';
import { ServiceStore, StoreWriteError } from '../../../../src/service/core/store.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const file = (sha256: string) => ({ sha256, name: 'me.jpg', fileSize: 1234, mimeType: 'image/jpeg', ext: 'jpg', subjectConsent: 'self' as const });

async function setup(speed: 'fast' | 'realistic' = 'realistic') {
  const clock = new SimulatedClock({ frozen: true, start: T0 });
  const store = await ServiceStore.open<AssetTables>({ file: false, tables: ['asset'] });
  const assets = new Assets({ store, clock, speed, random: () => 0.5 });
  return { clock, store, assets };
}

describe('Assets: the state table of spec 3.2', () => {
  it('(none) → pending → trusted when moderation passes, 5-60 s later', async () => {
    const { assets, clock } = await setup();
    const { asset, deduped } = assets.add({ accountId: 1, ...file('a'.repeat(64)) });
    expect(deduped).toBe(false);
    expect(asset).toMatchObject({ status: 'pending', id: 1 });
    expect(asset.moderation.at - T0).toBeGreaterThanOrEqual(5_000);
    expect(asset.moderation.at - T0).toBeLessThanOrEqual(60_000);
    expect(assets.listTrusted(1)).toEqual([]);
    await clock.advance(60_000);
    expect(assets.get(1, 1)).toMatchObject({ status: 'trusted', reasonCode: null });
    expect(assets.listTrusted(1).map((a) => a.id)).toEqual([1]);
  });

  it('pending → rejected when simulated, with its reason_code; fast speed compresses moderation', async () => {
    const { assets, clock } = await setup('fast');
    const { asset } = assets.add({ accountId: 1, ...file('b'.repeat(64)), rejectAs: 'violence' });
    expect(asset.moderation.at - T0).toBeLessThanOrEqual(2_000);
    await clock.advance(2_000);
    expect(asset).toMatchObject({ status: 'rejected', reasonCode: 'violence' });
    expect(assets.usable(asset)).toBe(false);
  });

  it('dedupes the same bytes per account; another account neither sees nor shares its asset', async () => {
    const { assets } = await setup();
    const first = assets.add({ accountId: 1, ...file('c'.repeat(64)) });
    expect(assets.add({ accountId: 1, ...file('c'.repeat(64)) })).toEqual({ asset: first.asset, deduped: true });
    const other = assets.add({ accountId: 2, ...file('c'.repeat(64)) });
    expect(other.deduped).toBe(false);
    expect(assets.get(2, first.asset.id)).toBeUndefined();
    expect(assets.fileInUse('c'.repeat(64))).toBe(true);
    expect(assets.byToken(first.asset.token)).toBe(first.asset);
    assets.remove(first.asset);
    assets.remove(other.asset);
    expect(assets.fileInUse('c'.repeat(64))).toBe(false);
    expect(assets.byToken(first.asset.token)).toBeUndefined();
  });

  it('keeps a character photo usable for 30 days only', async () => {
    const { assets, clock } = await setup();
    const photo = assets.addTrusted({ accountId: 1, sha256: 'd'.repeat(64), name: 'character-1.jpg', fileSize: 10, mimeType: 'image/jpeg', ext: 'jpg', trustedUntil: T0 + 30 * 86_400_000 });
    expect(assets.usable(photo)).toBe(true);
    await clock.advance(30 * 86_400_000);
    expect(assets.usable(photo)).toBe(false);
  });

  it('resumes moderations after a restart', async () => {
    const { assets, clock, store } = await setup();
    const { asset } = assets.add({ accountId: 1, ...file('e'.repeat(64)) });
    assets.stop();
    await clock.advance(120_000);
    expect(asset.status).toBe('pending');
    const again = new Assets({ store, clock, speed: 'realistic' });
    again.resume();
    await clock.advance(0);
    expect(again.get(1, asset.id)?.status).toBe('trusted');
  });

  it('reads the simulate field', () => {
    expect(parseAssetSimulation('rejected')).toEqual({ kind: 'rejected', reason: 'explicit_content' });
    expect(parseAssetSimulation('moderation_rejected:minor_detected')).toEqual({ kind: 'moderation_rejected', reason: 'minor_detected' });
    for (const value of [undefined, '', 'trusted', 'rejected:', 'rejected:Bad!']) expect(parseAssetSimulation(value)).toBeNull();
  });
});

describe('Assets: lookups that do not grow with other accounts\' assets (issue 31, s5a)', () => {
  it('an upload\'s dedupe, a file still in use, the trusted list and a public_url token read no other account\'s rows', async () => {
    const { assets, store, clock } = await setup('fast');
    for (let i = 0; i < 500; i++) assets.add({ accountId: 2, ...file(i.toString(16).padStart(64, '0')) });
    const mine = assets.add({ accountId: 1, ...file('c'.repeat(64)) }).asset;
    await clock.advance(2_000);
    const values = vi.spyOn(store.table('asset'), 'values').mockImplementation(() => {
      throw new Error('the whole asset table was read');
    });
    expect(assets.add({ accountId: 1, ...file('c'.repeat(64)) })).toEqual({ asset: mine, deduped: true });
    expect(assets.find(1, '0'.repeat(64))).toBeUndefined();
    expect([assets.fileInUse('c'.repeat(64)), assets.fileInUse('d'.repeat(64))]).toEqual([true, false]);
    expect(assets.listTrusted(1)).toEqual([mine]);
    expect(assets.byToken(mine.token)).toBe(mine);
    assets.remove(mine);
    expect([assets.byToken(mine.token), assets.fileInUse('c'.repeat(64)), assets.listTrusted(1)]).toEqual([undefined, false, []]);
    expect(values).not.toHaveBeenCalled();
  });

  it('an upload taken back with its unit is found by none of them, with nothing rebuilt', async () => {
    const { assets, store } = await setup();
    let token = '';
    await expect(store.unit(() => {
      token = assets.add({ accountId: 1, ...file('e'.repeat(64)) }).asset.token;
      throw new StoreWriteError(new Error('EROFS'));
    })).rejects.toThrow(StoreWriteError);
    expect([assets.byToken(token), assets.find(1, 'e'.repeat(64)), assets.fileInUse('e'.repeat(64))]).toEqual([undefined, undefined, false]);
    assets.stop();
  });
});
