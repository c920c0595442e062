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
