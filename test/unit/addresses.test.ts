import { ipv6Groups, isGlobalUnicast } from '../../src/apps/outbound/addresses';

test.each([
  // the holes a deny-list left open
  '::127.0.0.1', // IPv4-compatible
  '2002:7f00:1::1', // 6to4 of 127.0.0.1
  '2001::1', // Teredo
  '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo, written out
  '64:ff9b:1::a00:1', // local-use NAT64
  '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
  'fec0::1', // site-local
  '192.88.99.1', // 6to4 relay anycast
  // the usual suspects
  '127.0.0.1',
  '127.255.255.254',
  '10.0.0.1',
  '172.16.5.4',
  '192.168.1.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '192.0.0.8',
  '192.0.2.1',
  '198.18.0.1',
  '198.51.100.7',
  '203.0.113.9',
  '224.0.0.1',
  '239.255.255.250',
  '240.0.0.1',
  '255.255.255.255',
  '::',
  '::1',
  'fc00::1',
  'fd12:3456::1',
  'fe80::1',
  'fe80::1%eth0',
  'ff02::1',
  '100::1',
  '2001:db8::1',
  '3fff::1',
  '5f00::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  'localhost',
  'example.com',
  '',
  'not an address',
])('%s is refused', (address) => {
  expect(isGlobalUnicast(address)).toBe(false);
});

test.each([
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '223.255.255.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001:82a::200e',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
])('%s is allowed', (address) => {
  expect(isGlobalUnicast(address)).toBe(true);
});

test('IPv6 groups of every spelling', () => {
  expect(ipv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
  expect(ipv6Groups('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
  expect(ipv6Groups('::ffff:127.0.0.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]);
  expect(ipv6Groups('2001:DB8:0:0:8:800:200C:417A')).toEqual([0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a]);
});
