// Who a mail is from (src/channels/email/sender-verdict.ts), with mailauth asking a DNS server on
// loopback the test controls: mail signed by nodemailer's DKIM with the From domain's key passes
// DMARC; unsigned mail, mail signed by another domain, and mail whose SPF fails under p=reject do
// not; a domain without DMARC is vouched for by an aligned DKIM signature only.
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { mailResolver, senderVerdict } from '../../src/channels/email/sender-verdict';
import { startDnsServer, txt, type DnsServer } from '../helpers/dns-server';

const keys = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const privateKey = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const publicKey = keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });

let dns: DnsServer;
beforeAll(async () => {
  dns = await startDnsServer({
    'acme.test': { TXT: [['v=spf1 ip4:127.0.0.2 -all']], A: ['127.0.0.2'] },
    '_dmarc.acme.test': { TXT: [['v=DMARC1; p=reject']] },
    'sel._domainkey.acme.test': { TXT: [txt(`v=DKIM1; k=rsa; p=${publicKey}`)] },
    'nodmarc.test': { TXT: [['v=spf1 -all']] },
    'sel._domainkey.nodmarc.test': { TXT: [txt(`v=DKIM1; k=rsa; p=${publicKey}`)] },
    'other.test': { TXT: [['v=spf1 -all']] },
    // Two organisations under one public suffix, neither publishing DMARC; the attacker's SPF lists its host.
    'victim.co.uk': { TXT: [['v=spf1 -all']] },
    'evil.co.uk': { TXT: [['v=spf1 ip4:127.0.0.2 -all']] },
    'mail.evil.co.uk': { TXT: [['v=spf1 ip4:127.0.0.2 -all']] },
    'sel._domainkey.other.test': { TXT: [txt(`v=DKIM1; k=rsa; p=${other.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`)] },
  });
});
afterAll(() => dns.close());

async function mail(from: string, dkim?: { domainName: string; privateKey: string }): Promise<Buffer> {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, ...(dkim && { dkim: { ...dkim, keySelector: 'sel' } }) });
  const info = await transport.sendMail({
    from,
    to: 'support@agents.test',
    subject: 'Help',
    text: 'My order is late.',
    messageId: `<${crypto.randomUUID()}@acme.test>`,
  });
  return info.message as Buffer;
}

const on = (mailFrom: string, ip = '127.0.0.2') => ({ ip, helo: 'mail.acme.test', mailFrom, mta: 'build.test' });

test("signed with the From domain's key: DMARC passes", async () => {
  const verdict = await senderVerdict(await mail('bob@acme.test', { domainName: 'acme.test', privateKey }), on('bob@acme.test'), mailResolver([dns.address]));
  expect(verdict).toMatchObject({ authenticated: true, method: 'dmarc', fromDomain: 'acme.test', dmarc: 'pass' });
});

test('unsigned from a host SPF does not list, under p=reject: not authenticated', async () => {
  const verdict = await senderVerdict(await mail('bob@acme.test'), on('bob@acme.test', '127.0.0.9'), mailResolver([dns.address]));
  expect(verdict).toMatchObject({ authenticated: false, method: null, dmarc: 'fail', spf: 'fail' });
});

test("signed by another domain's key: DMARC fails", async () => {
  const otherKey = other.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const verdict = await senderVerdict(
    await mail('bob@acme.test', { domainName: 'other.test', privateKey: otherKey }),
    on('x@other.test', '127.0.0.9'),
    mailResolver([dns.address]),
  );
  expect(verdict).toMatchObject({ authenticated: false, dmarc: 'fail' });
});

test('a domain without DMARC: an aligned DKIM signature vouches; without it, nothing does', async () => {
  const signed = await senderVerdict(
    await mail('ann@nodmarc.test', { domainName: 'nodmarc.test', privateKey }),
    on('ann@nodmarc.test', '127.0.0.9'),
    mailResolver([dns.address]),
  );
  expect(signed).toMatchObject({ authenticated: true, method: 'dkim', dmarc: 'none' });
  const unsigned = await senderVerdict(await mail('ann@nodmarc.test'), on('ann@nodmarc.test', '127.0.0.9'), mailResolver([dns.address]));
  expect(unsigned).toMatchObject({ authenticated: false, dmarc: 'none' });
});

test('SPF of another organisation under the same public suffix (evil.co.uk for victim.co.uk) is not aligned: not authenticated', async () => {
  const forged = await mail('ceo@victim.co.uk');
  const verdict = await senderVerdict(
    forged,
    { ip: '127.0.0.2', helo: 'mail.evil.co.uk', mailFrom: 'x@evil.co.uk', mta: 'build.test' },
    mailResolver([dns.address]),
  );
  expect(verdict).toMatchObject({ authenticated: false, spf: 'pass', dmarc: 'none' });
  // The same organisation's own subdomain is aligned (relaxed).
  const own = await senderVerdict(
    await mail('ann@evil.co.uk'),
    { ip: '127.0.0.2', helo: 'mail.evil.co.uk', mailFrom: 'bounce@mail.evil.co.uk', mta: 'build.test' },
    mailResolver([dns.address]),
  );
  expect(own).toMatchObject({ authenticated: true, method: 'spf' });
});
