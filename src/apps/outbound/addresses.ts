// Which addresses the http tool may reach: global unicast only, as an allow-list. IPv6 must lie in
// 2000::/3, the only range IANA allocates for global unicast, and outside the blocks of it that are
// not globally reachable; so everything else (loopback, IPv4-compatible ::a.b.c.d, NAT64
// 64:ff9b::/96 and 64:ff9b:1::/48, unique-local, link- and site-local, multicast) is refused
// without being listed. IPv4 must be unicast (below 224.0.0.0) and outside IANA's special-purpose
// blocks that are not globally reachable. An IPv4-mapped IPv6 address is judged as its IPv4.
import net from 'node:net';

const GLOBAL_UNICAST_V6 = new net.BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

const NOT_GLOBAL_V6 = new net.BlockList();
for (const [address, prefix] of [
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32, benchmarking, ORCHID and more
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: it embeds any IPv4 address, private ones included
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // segment routing SIDs
] as const)
  NOT_GLOBAL_V6.addSubnet(address, prefix, 'ipv6');

const NOT_GLOBAL_V4 = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 3], // multicast 224/4, reserved 240/4 and the broadcast address: not unicast
] as const)
  NOT_GLOBAL_V4.addSubnet(address, prefix, 'ipv4');

/** The eight 16-bit groups of an IPv6 address (any spelling: `::`, an embedded dotted IPv4). */
export function ipv6Groups(address: string): number[] {
  const zone = address.indexOf('%');
  let text = (zone < 0 ? address : address.slice(0, zone)).toLowerCase(); // no zone id
  // An embedded IPv4 is the part after the last colon (anchored: the regex stays linear).
  const tailAt = text.lastIndexOf(':') + 1;
  const dotted = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text.slice(tailAt));
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tailAt)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const front = parse(head);
  const back = parse(tail);
  return tail === undefined ? front : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d) carries, or null. */
function mappedIpv4(groups: number[]): string | null {
  if (groups.slice(0, 5).some((g) => g !== 0) || groups[5] !== 0xffff) return null;
  const [hi, lo] = [groups[6] as number, groups[7] as number];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether `address` (an IP literal) is a global unicast address; anything that is not an IP is not. */
export function isGlobalUnicast(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !NOT_GLOBAL_V4.check(address, 'ipv4');
  if (family !== 6) return false;
  const mapped = mappedIpv4(ipv6Groups(address));
  if (mapped !== null) return isGlobalUnicast(mapped);
  return GLOBAL_UNICAST_V6.check(address, 'ipv6') && !NOT_GLOBAL_V6.check(address, 'ipv6');
}
