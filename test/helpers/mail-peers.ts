// The mail peers the channel tests talk to on loopback (issue 47): a sender's domain whose SPF,
// DKIM and DMARC records a DNS server under the test's control serves, nodemailer sending as that
// domain (DKIM-signed, from the address its SPF names) or forging it, and a second smtp-server
// standing for the relay, which records what the service sends through it.
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { startDnsServer, txt, type DnsServer } from './dns-server';

const pair = () => {
  const keys = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
};

/** acme.test signs with `acme`; evil.test with `evil`; SPF lists 127.0.0.2 for both; acme.test publishes DMARC p=reject. */
export const acme = pair();
export const evil = pair();

export function startMailDns(): Promise<DnsServer> {
  return startDnsServer({
    'acme.test': { TXT: [['v=spf1 ip4:127.0.0.2 -all']], A: ['127.0.0.2'] },
    'mail.acme.test': { A: ['127.0.0.2'] },
    '_dmarc.acme.test': { TXT: [['v=DMARC1; p=reject']] },
    'sel._domainkey.acme.test': { TXT: [txt(`v=DKIM1; k=rsa; p=${acme.publicKey}`)] },
    'evil.test': { TXT: [['v=spf1 ip4:127.0.0.2 -all']] },
    'sel._domainkey.evil.test': { TXT: [txt(`v=DKIM1; k=rsa; p=${evil.publicKey}`)] },
  });
}

export interface Outgoing {
  from: string;
  to: string | string[];
  subject?: string;
  text: string;
  messageId?: string;
  headers?: Record<string, string>;
  /** The envelope's sender; '' for a null return path. Default: `from`. */
  mailFrom?: string;
  /** Sign as this domain (default acme.test with acme's key); null: unsigned. */
  dkim?: { domainName: string; privateKey: string } | null;
  /** The client's address (default 127.0.0.2, which SPF lists). */
  localAddress?: string;
}

/** Sends `mail` to the SMTP listener on `port`; the listener's reply, or its refusal as an error (responseCode). */
export async function sendMail(port: number, mail: Outgoing): Promise<{ response: string; rejected: string[] }> {
  const dkim = mail.dkim === undefined ? { domainName: 'acme.test', privateKey: acme.privateKey } : mail.dkim;
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    name: 'mail.acme.test',
    localAddress: mail.localAddress ?? '127.0.0.2',
    ...(dkim && { dkim: { ...dkim, keySelector: 'sel' } }),
  });
  try {
    const to = Array.isArray(mail.to) ? mail.to : [mail.to];
    const info = await transport.sendMail({
      envelope: { from: mail.mailFrom ?? mail.from, to },
      from: mail.from,
      to,
      subject: mail.subject ?? 'Hello',
      text: mail.text,
      messageId: mail.messageId ?? `<${crypto.randomUUID()}@acme.test>`,
      headers: mail.headers,
    });
    return { response: info.response, rejected: (info.rejected as string[]).map(String) };
  } finally {
    transport.close();
  }
}

export interface RelayRecorder {
  url: string;
  received: { envelope: { from: string; to: string[] }; mail: ParsedMail; raw: Buffer }[];
  /** The next `n` messages are refused with this SMTP reply (e.g. 451, 550). */
  refuseNext(n: number, code: number): void;
  close(): Promise<void>;
}

/** A relay on loopback (on `port`, default any) that requires the URL's credentials and keeps every message it accepts. */
export async function startRelay(user = 'relay-user', password = 'relay-pass', port = 0): Promise<RelayRecorder> {
  const received: RelayRecorder['received'] = [];
  let refusals: { left: number; code: number } = { left: 0, code: 0 };
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth: (auth, _session, cb) => (auth.username === user && auth.password === password ? cb(null, { user }) : cb(new Error('bad credentials'))),
    onData: (stream, session, cb) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (refusals.left > 0) {
          refusals.left--;
          return cb(Object.assign(new Error(refusals.code >= 500 ? '5.7.1 refused by policy' : '4.4.1 try again later'), { responseCode: refusals.code }));
        }
        const raw = Buffer.concat(chunks);
        const envelope = { from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address) };
        void simpleParser(raw).then((mail) => {
          received.push({ envelope, mail, raw });
          cb();
        }, cb);
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const listening = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://${user}:${password}@127.0.0.1:${listening}`,
    received,
    refuseNext: (left, code) => {
      refusals = { left, code };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
