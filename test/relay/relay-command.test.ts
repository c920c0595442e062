import { describe, expect, it } from 'vitest';
import { createRelayServer } from 'cliphook';
import { relay, type RelayCommandOptions } from '../../src/cli/commands/relay.js';
import { isLoopback } from '../../src/relay/server-http.js';

const silent = { out() {}, logger: { info() {}, warn() {} }, signal: AbortSignal.abort() };
const run = (options: Partial<RelayCommandOptions>) => relay({ port: '0', host: '127.0.0.1', data: '/nonexistent/relay.json', ...options }, silent);

describe('cliphook relay: exposure guard and flags', () => {
  it('refuses a non-loopback --host without --admin-token unless --open, in one line naming both flags (exit 2)', async () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'relay.example.com']) {
      const refused = run({ host });
      await expect(refused).rejects.toMatchObject({ exitCode: 2 });
      const { message } = (await refused.catch((error: Error) => error)) as Error;
      expect(message).toMatch(/--admin-token/);
      expect(message).toMatch(/--open/);
      expect(message).not.toContain('\n');
    }
    // With --open (or a token) the guard lets it through: here the next check, of --public-url, stops it before binding.
    await expect(run({ host: '0.0.0.0', open: true, publicUrl: 'ftp://x' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^Expected --public-url /) });
    await expect(run({ host: '0.0.0.0', adminToken: 'adm', publicUrl: 'ftp://x' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/--public-url/) });
  });

  it('names the flag, not the library option, in a bad value (exit 2)', async () => {
    await expect(run({ publicUrl: 'not a url' })).rejects.toMatchObject({ exitCode: 2, message: 'Expected --public-url to be an absolute http/https URL, got "not a url".' });
    await expect(run({ maxChannels: '0' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^Expected --max-channels to be a positive integer/) });
    await expect(run({ maxChannels: 'many' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--max-channels must be a whole number/) });
    await expect(run({ maxTotalBufferedBytes: '1.5' })).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/^--max-total-buffered-bytes /) });
  });
});

describe('RelayServer.listen exposure guard', () => {
  it('rejects a non-loopback host without adminToken unless open: true, before binding anything', async () => {
    const relay = createRelayServer({ file: false });
    await expect(relay.listen(0, '0.0.0.0')).rejects.toThrow(/`adminToken`.*`open: true`/);
    expect(relay.url).toBeNull();
    expect(() => createRelayServer({ file: false, open: 'yes' as never })).toThrow(/`open`/);
    expect(() => createRelayServer({ file: false, maxChannels: 0 })).toThrow(/`maxChannels`/);
    expect(() => createRelayServer({ file: false, maxTotalBufferedBytes: -1 })).toThrow(/`maxTotalBufferedBytes`/);
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopback(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '', '10.0.0.1', '128.0.0.1', 'example.com', '::ffff:10.0.0.1']) expect(isLoopback(host), host).toBe(false);
  });
});
