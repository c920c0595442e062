import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { classifyAddress } from 'cliphook';

describe('classifyAddress', () => {
  it.each([
    ['0.0.0.0', 'unspecified'], ['0.1.2.3', 'unspecified'], ['::', 'unspecified'],
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['::1', 'loopback'],
    ['10.0.0.1', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
    ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['fec0::1', 'private'],
    ['169.254.0.1', 'link-local'], ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['febf::1', 'link-local'],
    ['100.64.0.1', 'cgnat'], ['100.127.255.255', 'cgnat'], ['100.100.100.200', 'cgnat'],
    ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'], ['ff02::1', 'multicast'], ['ff05::1:3', 'multicast'],
    ['169.254.169.254', 'metadata'], ['fd00:ec2::254', 'metadata'], ['::ffff:169.254.169.254', 'metadata'],
    ['255.255.255.255', 'reserved'], ['198.18.0.1', 'reserved'], ['::7f00:1', 'reserved'],
    // IPv4-mapped and NAT64 forms are judged by the IPv4 address they carry
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'], ['64:ff9b::192.168.0.1', 'private'], ['[::1]', 'loopback'],
    // SIIT (::ffff:0:0:0/96) by its last 32 bits, 6to4 (2002::/16) by bits 16-47, Teredo (2001::/32) by its
    // client address: the last 32 bits inverted
    ['::ffff:0:127.0.0.1', 'loopback'], ['::ffff:0:a9fe:a9fe', 'metadata'], ['::ffff:0:a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'], ['2002:a9fe:a9fe::1', 'metadata'], ['2002:c0a8:101:1::1', 'private'], ['2002:6440:1::', 'cgnat'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], ['2001::3f57:fefe', 'private'], ['2001:0:1:2:3:4:5601:5601', 'metadata'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it.each(['8.8.8.8', '93.184.215.14', '100.63.255.255', '100.128.0.1', '172.15.255.255', '172.32.0.0', '2001:4860:4860::8888', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8',
    '::ffff:0:808:808', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'])(
    '%s is public',
    (address) => {
      expect(classifyAddress(address)).toBeNull();
    },
  );

  it('judges a v4-mapped v6 address exactly as its IPv4 address', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(classifyAddress(`::ffff:${ip}`)).toBe(classifyAddress(ip));
      }),
    );
  });

  it('refuses what is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(TypeError);
  });
});
