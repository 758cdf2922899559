// A DNS server on loopback serving a zone the test writes (issue 47: the SPF, DKIM and DMARC records
// mailauth asks for), on UDP and TCP at one port, as node's resolver expects (it retries a
// truncated answer over TCP at the same port). A name the zone lacks is NXDOMAIN (ENOTFOUND); a
// type a name lacks is an empty answer (ENODATA).
import dgram from 'node:dgram';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';

/** Records by name (lower case, no trailing dot), then by type: TXT as arrays of strings, A as addresses. */
export type Zone = Record<string, Partial<Record<'TXT' | 'A' | 'AAAA' | 'MX', unknown[]>>>;

/** A TXT record's text cut into the 255-byte character-strings DNS carries (a DKIM key needs two). */
export const txt = (text: string): string[] => Array.from({ length: Math.ceil(text.length / 255) }, (_, i) => text.slice(i * 255, (i + 1) * 255));

export interface DnsServer {
  /** `127.0.0.1:<port>`, for the setting that names the resolvers. */
  address: string;
  zone: Zone;
  close(): Promise<void>;
}

export async function startDnsServer(zone: Zone): Promise<DnsServer> {
  const answer = (query: dnsPacket.Packet): dnsPacket.Packet => {
    const question = query.questions![0]!;
    const records = zone[question.name.toLowerCase().replace(/\.$/, '')];
    const answers = ((records?.[question.type as keyof Zone[string]] ?? []) as unknown[]).map(
      (data) => ({ name: question.name, type: question.type, class: 'IN', ttl: 60, data }) as dnsPacket.Answer,
    );
    const rcode = records ? 0 : 3; // NXDOMAIN
    return {
      id: query.id,
      type: 'response',
      questions: query.questions,
      answers,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_AVAILABLE | rcode,
    };
  };
  // UDP on a free port, then TCP on the same one; another process may hold that TCP port: then again.
  for (let attempt = 0; ; attempt++) {
    const udp = dgram.createSocket('udp4');
    udp.on('message', (message, remote) => udp.send(dnsPacket.encode(answer(dnsPacket.decode(message))), remote.port, remote.address));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    const { port } = udp.address() as AddressInfo;
    // One query per connection's segment: enough for node's resolver.
    const tcp = net.createServer((socket) => socket.on('data', (bytes) => socket.end(dnsPacket.streamEncode(answer(dnsPacket.streamDecode(bytes))))));
    const listening = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      tcp.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!listening) {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      if (attempt < 20) continue;
      throw new Error('no port free for both UDP and TCP');
    }
    return server(udp, tcp, port, zone);
  }
}

function server(udp: dgram.Socket, tcp: net.Server, port: number, zone: Zone): DnsServer {
  return {
    address: `127.0.0.1:${port}`,
    zone,
    close: async () => {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    },
  };
}
