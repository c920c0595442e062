// Issue 10: `cliphook/web` must run where Node does not. The entry is bundled for the browser by a real
// bundler (esbuild), which fails on any Node built-in it would need, and the bundle then runs in a bare
// V8 context that has only what a Cloudflare Worker has: no process, Buffer, require or global.
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { createContext, runInContext } from 'node:vm';
import { build, type BuildOptions } from 'esbuild';
import { describe, expect, it, vi } from 'vitest';
import { sign } from '../../src/index.js';
import type * as Web from '../../src/web.js';
import { SECRET, completedEvent, failedEvent, signedRequest } from '../helpers/webhooks.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const common: BuildOptions = { entryPoints: ['src/web.ts'], absWorkingDir: root, bundle: true, platform: 'browser', write: false, metafile: true, logLevel: 'silent' };
const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** What a Worker's global scope offers (and the vm context's own JS built-ins: Object, Promise, JSON, …). */
const workerGlobals = () => ({
  crypto: globalThis.crypto,
  TextEncoder,
  TextDecoder,
  Request,
  Response,
  Headers,
  ReadableStream,
  URL,
  AbortController,
  setTimeout,
  clearTimeout,
  console,
});

describe('cliphook/web bundled for a Worker', () => {
  it('bundles for the browser with esbuild, without errors and without any Node built-in or dependency', async () => {
    const result = await build({ ...common, format: 'esm' });
    expect(result.errors).toEqual([]);
    const inputs = Object.keys(result.metafile!.inputs);
    expect(inputs).toContain('src/web.ts');
    expect(inputs.filter((input) => NODE_BUILTINS.has(input) || input.startsWith('node:'))).toEqual([]);
    // Every module is ours: no dependency (lowdb, ws, raw-body) sneaks in.
    expect(inputs.filter((input) => !input.startsWith('src/'))).toEqual([]);
    expect(inputs).not.toContain('src/protocol/signature.ts');
    const code = result.outputFiles![0]!.text;
    // Node's globals, used as values (a mention inside an error message is not a use).
    expect(code).not.toMatch(/(?<![\w$.'"`])(Buffer|process|require|__dirname|global)\s*[.([]/);
  });

  it('a Node built-in reachable from the entry fails the same build (the check has teeth)', async () => {
    const failing = build({ ...common, format: 'esm', entryPoints: ['src/receiver/verify.ts'] });
    await expect(failing).rejects.toThrow(/node:buffer|node:crypto/);
  });

  it('runs in a V8 context without Node globals: verifies a request signed by the Node sign, refuses a tampered one', async () => {
    const result = await build({ ...common, format: 'iife', globalName: 'cliphookWeb' });
    const context = createContext(workerGlobals());
    runInContext(result.outputFiles![0]!.text, context, { filename: 'cliphook-web.js' });
    expect(runInContext('[typeof process, typeof Buffer, typeof require, typeof global]', context)).toEqual(['undefined', 'undefined', 'undefined', 'undefined']);
    const web = (context as { cliphookWeb: typeof Web }).cliphookWeb;

    const receiver = web.createReceiver({ secret: SECRET });
    const handler = vi.fn();
    receiver.on('video.completed', handler);
    const event = completedEvent({ id: 4242 });
    const req = signedRequest(event, { deliveryId: 'dlv_worker' });
    const post = (body: string, headers: Record<string, string>) => receiver.fetch(new Request('https://worker.example/webhooks', { method: 'POST', headers, body }));

    const ok = await post(req.body, req.headers);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ received: true });
    expect(handler).toHaveBeenCalledTimes(1);
    expect(handler.mock.calls[0]![0]).toMatchObject({ event: 'video.completed', id: 4242 });

    const tampered = await post(req.body.replace('"credits_used":18', '"credits_used":0'), req.headers);
    expect(tampered.status).toBe(401);
    expect(tampered.headers.get('content-type')).toBe('application/problem+json');
    expect(((await tampered.json()) as { code: string }).code).toBe('invalid_signature');

    const forged = await post(req.body, { ...req.headers, 'x-service-delivery': 'dlv_forged' });
    expect(await forged.json()).toEqual({ received: true, duplicate: true });
    expect(handler).toHaveBeenCalledTimes(1);

    const verified = await web.verifyWebhook(req.body, new Headers(req.headers), { secret: ['whsec_new', SECRET] });
    expect(verified.deliveryId).toBe('dlv_worker');
    expect(await web.sign(req.body, SECRET)).toBe(sign(req.body, SECRET));
    const failed = failedEvent();
    expect(await web.verifySignature(JSON.stringify(failed), sign(JSON.stringify(failed), SECRET), SECRET)).toBe(true);
  });
});
