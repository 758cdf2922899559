// The tests' DNS server answers node's resolver as a real one would: records, ENODATA, ENOTFOUND.
import { Resolver } from 'node:dns/promises';
import { startDnsServer, txt, type DnsServer } from '../helpers/dns-server';

let dns: DnsServer;
beforeAll(async () => {
  dns = await startDnsServer({
    'example.test': { TXT: [['v=spf1 ip4:127.0.0.2 -all']], A: ['127.0.0.2'] },
    'k._domainkey.example.test': { TXT: [txt('p='.padEnd(600, 'A'))] },
  });
});
afterAll(() => dns.close());

test('TXT and A records, a long TXT in chunks; a missing type is ENODATA, a missing name ENOTFOUND', async () => {
  const resolver = new Resolver();
  resolver.setServers([dns.address]);
  expect(await resolver.resolve('example.test', 'TXT')).toEqual([['v=spf1 ip4:127.0.0.2 -all']]);
  expect(await resolver.resolve('example.test', 'A')).toEqual(['127.0.0.2']);
  expect((await resolver.resolve('k._domainkey.example.test', 'TXT'))[0]!.join('')).toHaveLength(600);
  await expect(resolver.resolve('example.test', 'MX')).rejects.toMatchObject({ code: 'ENODATA' });
  await expect(resolver.resolve('nowhere.test', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
});

test('over TCP too (what the resolver uses for a truncated answer)', async () => {
  const net = await import('node:net');
  const dnsPacket = (await import('dns-packet')).default;
  const [host, port] = dns.address.split(':');
  const reply = await new Promise<Buffer>((resolve, reject) => {
    const socket = net.connect(Number(port), host, () =>
      socket.write(dnsPacket.streamEncode({ id: 7, type: 'query', questions: [{ type: 'A', name: 'example.test' }] })),
    );
    const chunks: Buffer[] = [];
    socket
      .on('data', (c) => chunks.push(c))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
  expect(dnsPacket.streamDecode(reply).answers).toMatchObject([{ type: 'A', data: '127.0.0.2' }]);
});
