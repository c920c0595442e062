import { describe, expect, it } from 'vitest';
import { resolver } from '../helpers/resolver.js';
import { InvalidCallbackUrlError, type LookupFunction } from 'cliphook';
import { checkHost, guardLookup } from '../../src/http/outbound-guard.js';

function lookupOnce(lookup: LookupFunction, hostname: string, all: boolean) {
  return new Promise<{ error: Error | null; result: unknown }>((resolve) => {
    guardLookup(lookup)(hostname, { all }, (error, result) => resolve({ error, result }));
  });
}

describe('checkHost', () => {
  it('refuses a literal non-public address in any bracketing, and lets names and public addresses pass', () => {
    expect(() => checkHost('[::ffff:127.0.0.1]')).toThrow(/loopback address \(::ffff:127\.0\.0\.1\)/);
    expect(() => checkHost('169.254.169.254')).toThrow(InvalidCallbackUrlError);
    expect(() => checkHost('localhost.example.com')).not.toThrow();
    expect(() => checkHost('93.184.215.14')).not.toThrow();
  });
});

describe('guardLookup', () => {
  it('refuses a name when any address it resolves to is private', async () => {
    for (const all of [true, false]) {
      const { error } = await lookupOnce(resolver('93.184.215.14', '10.0.0.7'), 'rebind.example.com', all);
      expect(error).toBeInstanceOf(InvalidCallbackUrlError);
      expect(error!.message).toMatch(/rebind\.example\.com resolves to 10\.0\.0\.7/);
    }
  });

  it('passes public answers through in the shape asked for', async () => {
    expect((await lookupOnce(resolver('93.184.215.14'), 'example.com', false)).result).toBe('93.184.215.14');
    expect((await lookupOnce(resolver('2606:4700::1111', '93.184.215.14'), 'example.com', true)).result).toHaveLength(2);
  });

  it('refuses a v4-mapped v6 answer for the metadata address', async () => {
    const { error } = await lookupOnce(resolver('::ffff:169.254.169.254'), 'meta.example.com', true);
    expect(error).toBeInstanceOf(InvalidCallbackUrlError);
    expect(error!.message).toMatch(/metadata/);
  });

  it('answers ENOTFOUND for a name without addresses, in the shape asked for', async () => {
    for (const all of [true, false]) {
      const { error, result } = await lookupOnce(resolver(), 'void.example.com', all);
      expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
      expect(result).toEqual(all ? [] : '');
    }
  });
});
