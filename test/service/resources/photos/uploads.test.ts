// Issue 31 (s5a): the upload links' lookups (by token hash, by the asset a photo became) are indexes of the
// photo_upload table, kept in step by it: a link taken back with its unit opens nothing, with nothing rebuilt.
import { describe, expect, it, vi } from 'vitest';
import { ServiceStore, StoreWriteError } from '../../../../src/service/core/store.js';
import { PhotoUploads, type PhotoUploadTables } from '../../../../src/service/resources/photos/uploads.js';

const setup = async () => {
  const store = await ServiceStore.open<PhotoUploadTables>({ file: false, tables: ['photo_upload'] });
  return { store, uploads: new PhotoUploads(store, () => 1_000) };
};

describe('PhotoUploads lookups', () => {
  it('a link made in a unit that is taken back opens nothing; one made after it opens', async () => {
    const { store, uploads } = await setup();
    let token = '';
    await expect(store.unit(() => {
      token = uploads.create({ accountId: 1, keyId: 'key_1' }).token;
      throw new StoreWriteError(new Error('EROFS'));
    })).rejects.toThrow(StoreWriteError);
    expect(uploads.open(token)).toEqual({ ok: false, reason: 'unknown' });
    const made = uploads.create({ accountId: 1, keyId: 'key_1' });
    expect(uploads.open(made.token)).toEqual({ ok: true, upload: made.upload });
  });

  it('finds the upload that made an asset without reading other links', async () => {
    const { store, uploads } = await setup();
    for (let i = 0; i < 200; i++) uploads.markUsed(uploads.create({ accountId: 2, keyId: 'key_2' }).upload, { assetId: i + 10, subjectConsent: 'self' });
    const { upload } = uploads.create({ accountId: 1, keyId: 'key_1' });
    uploads.markUsed(upload, { assetId: 7, subjectConsent: 'no_real_person' });
    const values = vi.spyOn(store.table('photo_upload'), 'values').mockImplementation(() => {
      throw new Error('every link was read');
    });
    expect(uploads.byAsset(1, 7)).toBe(upload);
    expect([uploads.byAsset(2, 7), uploads.byAsset(1, 10)]).toEqual([undefined, undefined]);
    expect(values).not.toHaveBeenCalled();
  });
});

describe('PhotoUploads pruning', () => {
  it('a new link drops the links unused for a week past their expiry, reading only the unused ones: the used ones a photo\'s consent needs stay, however many', async () => {
    const store = await ServiceStore.open<PhotoUploadTables>({ file: false, tables: ['photo_upload'] });
    let now = 1_000;
    const uploads = new PhotoUploads(store, () => now);
    for (let i = 0; i < 300; i++) uploads.markUsed(uploads.create({ accountId: 2, keyId: 'key_2' }).upload, { assetId: i + 10, subjectConsent: 'self' });
    const stale = uploads.create({ accountId: 1, keyId: 'key_1' });
    now += 60 * 60 * 1000 + 7 * 24 * 60 * 60 * 1000 + 1;
    const table = store.table('photo_upload');
    const values = vi.spyOn(table, 'values');
    const get = vi.spyOn(table, 'get');
    const fresh = uploads.create({ accountId: 1, keyId: 'key_1' });
    // Neither the used links nor any other row was read to find the stale one.
    expect(values).not.toHaveBeenCalled();
    expect(get).not.toHaveBeenCalled();
    expect(uploads.open(stale.token)).toEqual({ ok: false, reason: 'unknown' });
    expect(uploads.open(fresh.token)).toMatchObject({ ok: true });
    expect(table.size).toBe(301);
    expect(uploads.byAsset(2, 10)).toBeDefined();
  });
});
