import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiveUpload } from '../../../../src/service/http/multipart.js';

// The smallest files of each kind that their magic bytes identify.
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000'.padEnd(134, '0'), 'hex');
const JPEG = Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), Buffer.alloc(200, 1), Buffer.from('ffd9', 'hex')]);
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(100)]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(100)]);
const HEIC = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypheic'), Buffer.from([0, 0, 0, 0]), Buffer.from('mif1heic'), Buffer.alloc(100)]);

let dir: string;
let server: Server;
let url: string;
const MAX = 64 * 1024;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cliphook-upload-'));
  server = createServer((req, res) => {
    void receiveUpload(req, { dir, maxBytes: MAX }).then((result) => {
      const body = result.ok ? { ...result.value, path: undefined, kept: readFileSync(result.value.path).length } : result.refusal;
      res.writeHead(result.ok ? 200 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function upload(parts: Array<[string, string | Blob, string?]>) {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename);
  }
  const res = await fetch(url, { method: 'POST', body: form });
  return (await res.json()) as Record<string, unknown>;
}

describe('receiveUpload (POST /assets, spec 4.12)', () => {
  it('recognises each allowed type by its bytes, not its name or declared type, and hashes the bytes', async () => {
    for (const [bytes, mime] of [[PNG, 'image/png'], [JPEG, 'image/jpeg'], [GIF, 'image/gif'], [WEBP, 'image/webp'], [HEIC, 'image/heic']] as const) {
      const result = await upload([['file', new Blob([bytes], { type: 'text/plain' }), 'photo.txt'], ['subject_consent', 'self']]);
      expect(result).toMatchObject({ mime, size: bytes.length, kept: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), name: 'photo.txt', fields: { subject_consent: 'self' } });
    }
  });

  it('takes a .png name with JPEG bytes as JPEG, and refuses a text file named .jpg (bad_mime)', async () => {
    expect(await upload([['file', new Blob([JPEG], { type: 'image/png' }), 'a.png']])).toMatchObject({ mime: 'image/jpeg', ext: 'jpg' });
    expect(await upload([['file', new Blob(['hello, I am text'], { type: 'image/jpeg' }), 'a.jpg']])).toMatchObject({ code: 'bad_mime' });
    // A PDF is a real format, but not an image.
    expect(await upload([['file', new Blob(['%PDF-1.7\n%âãÏÓ\n1 0 obj\n'.padEnd(300, ' ')]), 'a.jpg']])).toMatchObject({ code: 'bad_mime' });
  });

  it('answers no_file without a file part, for an empty file, and for a body that is not multipart', async () => {
    expect(await upload([['subject_consent', 'self']])).toMatchObject({ code: 'no_file' });
    expect(await upload([['photo', new Blob([PNG]), 'a.png']])).toMatchObject({ code: 'no_file' });
    expect(await upload([['file', new Blob([]), 'a.png']])).toMatchObject({ code: 'no_file' });
    const json = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"file":"x"}' });
    expect(await json.json()).toMatchObject({ code: 'no_file' });
    const broken = await fetch(url, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=xyz' }, body: 'not a multipart body at all' });
    expect(await broken.json()).toMatchObject({ code: 'no_file' });
  });

  it('refuses a file one byte over the cap with too_large while reading, keeps nothing, and the sender reads the answer', async () => {
    const before = readdirSync(dir).length;
    const over = Buffer.concat([JPEG, Buffer.alloc(MAX + 1 - JPEG.length, 7)]);
    expect(await upload([['file', new Blob([over]), 'big.jpg']])).toMatchObject({ code: 'too_large' });
    const exact = Buffer.concat([JPEG, Buffer.alloc(MAX - JPEG.length, 7)]);
    expect(readdirSync(dir)).toHaveLength(before);
    expect(await upload([['file', new Blob([exact]), 'max.jpg']])).toMatchObject({ size: MAX });
    // A sender streaming far more than the cap gets the 413 too (no EPIPE): 4 MiB against a 64 KiB cap.
    const answer = await new Promise<string>((resolve, reject) => {
      const boundary = 'cliphookboundary';
      const req = request(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.write(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.jpg"\r\n\r\n`);
      req.write(JPEG);
      for (let i = 0; i < 64; i++) req.write(Buffer.alloc(64 * 1024, 1));
      req.end(`\r\n--${boundary}--\r\n`);
    });
    expect(JSON.parse(answer)).toMatchObject({ code: 'too_large' });
    // Only the accepted file at the cap is left, for the caller to keep or remove.
    expect(readdirSync(dir)).toHaveLength(before + 1);
  });
});
