// Issue 20 item 2: uploads whose pixels cannot be decoded, or are more than the limit, are refused when
// they arrive, by POST /v1/assets and by the assistant's photo upload page alike (one code path).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StartedService } from '../../../../src/service/http/app.js';
import { call, connect, start } from '../../assistant/fixtures.js';
import { PNG_GARBAGE, pngClaiming } from './broken-images.js';

const CASES: Array<[string, Buffer, number, string]> = [
  ['a header claiming 100000×100000', pngClaiming(100_000, 100_000), 413, 'too_large'],
  ['a header claiming 20000×20000', pngClaiming(20_000, 20_000), 413, 'too_large'],
  ['a PNG signature followed by garbage', PNG_GARBAGE, 400, 'bad_mime'],
  ['a header claiming 4000×4000 with no pixels behind it', pngClaiming(4000, 4000), 400, 'bad_mime'],
];

async function post(url: string, bytes: Buffer, headers: Record<string, string>) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)], { type: 'image/png' }), 'photo.png');
  form.append('subject_consent', 'self');
  const res = await fetch(url, { method: 'POST', body: form, headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const leftovers = (started: StartedService) => {
  const dir = started.service.files.uploads;
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe('uploads the service cannot decode (issue 20 item 2)', () => {
  it('POST /v1/assets refuses each with the spec code (413 too_large, 400 bad_mime): nothing kept, no temporary file', async () => {
    const started = await start();
    for (const [what, bytes, status, code] of CASES) {
      const answer = await post(`${started.url}/assets`, bytes, { authorization: `Bearer ${started.apiKey}` });
      expect(answer, what).toMatchObject({ status, body: { code, status } });
    }
    expect(started.service.store.table('asset').size).toBe(0);
    expect(leftovers(started)).toEqual([]);
    const assets = join(started.service.files.dir, 'assets');
    expect(existsSync(assets) ? readdirSync(assets) : []).toEqual([]);
  });

  it('the assistant\'s photo upload page refuses the same bytes with the same codes', async () => {
    const started = await start();
    const client = await connect(started);
    for (const [what, bytes, status, code] of CASES) {
      const link = await call(client, 'start_photo_upload');
      const url = (link.data as { upload_url: string }).upload_url;
      const answer = await post(url, bytes, { accept: 'application/json', origin: started.origin });
      expect(answer, what).toMatchObject({ status, body: { code } });
    }
    expect(started.service.store.table('asset').size).toBe(0);
    expect(leftovers(started)).toEqual([]);
  });
});
