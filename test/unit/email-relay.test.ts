// The relay (src/channels/email/relay.ts) against a second smtp-server on loopback acting as one:
// it requires the URL's user and password, records what it gets, and refuses some recipients for
// good (550) or for now (451). The message keeps our Message-ID and thread headers; each failure is
// classed permanent or temporary; no error ever repeats the URL's password.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { composeReply } from '../../src/channels/email/compose-reply';
import { type OutgoingMail, relayFromUrl } from '../../src/channels/email/relay';
import { parseMail } from '../../src/channels/email/parse-mail';

const USER = 'relay-user';
/** Percent-encoded in the URL: `/` and `@` are no URL's own characters there. */
const PASSWORD = 's3cr/et@pw';
const URL_PASSWORD = encodeURIComponent(PASSWORD);

interface Recorded {
  raw: Buffer;
  mailFrom: string;
  rcptTo: string[];
  user: unknown;
}

async function startRelay(secure = false): Promise<{ server: SMTPServer; port: number; recorded: Recorded[] }> {
  const recorded: Recorded[] = [];
  const server = new SMTPServer({
    secure,
    disabledCommands: secure ? [] : ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    disableReverseLookup: true,
    onAuth(auth, _session, callback) {
      if (auth.username === USER && auth.password === PASSWORD) return callback(null, { user: USER });
      callback(Object.assign(new Error('5.7.8 Authentication failed'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('gone@')) return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }));
      if (address.address.startsWith('full@')) return callback(Object.assign(new Error('4.2.2 Mailbox full, try later'), { responseCode: 451 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        recorded.push({
          raw: Buffer.concat(chunks),
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          user: session.user,
        });
        callback(null, 'queued as R1');
      });
    },
  });
  // A client that refuses the certificate drops the handshake: an 'error' event with no listener would end jest.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.server.address() as AddressInfo).port, recorded };
}

const closeServer = (server: SMTPServer) => new Promise<void>((resolve) => server.close(() => resolve()));

let relay: Awaited<ReturnType<typeof startRelay>>;
beforeAll(async () => {
  relay = await startRelay();
});
afterAll(() => closeServer(relay.server));

const mail = (overrides: Partial<OutgoingMail> = {}): OutgoingMail => ({
  from: { name: 'Support Bot', address: 'support.abc@agents.test' },
  to: ['bob@acme.test'],
  subject: 'Re: Order 7',
  text: 'It is on its way.',
  messageId: '<fixed-1@agents.test>',
  inReplyTo: '<m2@acme.test>',
  references: ['<m1@agents.test>', '<m2@acme.test>'],
  headers: { 'Auto-Submitted': 'auto-replied' },
  ...overrides,
});

function withRelay<T>(url: string, use: (r: NonNullable<ReturnType<typeof relayFromUrl>>) => Promise<T>): Promise<T> {
  const r = relayFromUrl(url, { timeoutMs: 3_000 })!;
  return use(r).finally(() => r.close());
}

test('no URL, no relay: the caller records the mail unsent', () => {
  expect(relayFromUrl(undefined)).toBeNull();
  expect(relayFromUrl('  ')).toBeNull();
});

test('a reply is sent with our Message-ID, its thread headers, the display name, and the envelope from our address', async () => {
  const url = `smtp://${USER}:${URL_PASSWORD}@127.0.0.1:${relay.port}`;
  const composed = composeReply({
    from: { name: 'Support Bot', address: 'support.abc@agents.test' },
    parent: { from: 'bob@acme.test', subject: 'Order 7', messageId: '<m2@acme.test>', references: ['<m1@agents.test>'] },
    text: 'It is on its way.',
    locale: 'en',
  });
  const result = await withRelay(url, (r) => r.send(composed));
  expect(result).toEqual({ ok: true, response: expect.stringContaining('250'), rejected: [] });
  const got = relay.recorded.at(-1)!;
  expect(got).toMatchObject({ mailFrom: 'support.abc@agents.test', rcptTo: ['bob@acme.test'], user: USER });
  const parsed = await parseMail(got.raw);
  expect(parsed).toMatchObject({
    from: 'support.abc@agents.test',
    to: ['bob@acme.test'],
    subject: 'Re: Order 7',
    messageId: composed.messageId,
    inReplyTo: '<m2@acme.test>',
    references: ['<m1@agents.test>', '<m2@acme.test>'],
    autoSubmitted: 'auto-replied',
  });
  expect(got.raw.toString()).toContain('From: Support Bot <support.abc@agents.test>');
  expect(parsed.text).toContain('This message was written by an AI agent.');
});

test('sent twice (an acknowledgement lost), it is the same message both times', async () => {
  const url = `smtp://${USER}:${URL_PASSWORD}@127.0.0.1:${relay.port}`;
  await withRelay(url, async (r) => {
    await r.send(mail({ messageId: '<again@agents.test>' }));
    await r.send(mail({ messageId: '<again@agents.test>' }));
  });
  const ids = await Promise.all(relay.recorded.slice(-2).map(async (m) => (await parseMail(m.raw)).messageId));
  expect(ids).toEqual(['<again@agents.test>', '<again@agents.test>']);
});

test('some recipients refused: sent to the others, the refused named', async () => {
  const url = `smtp://${USER}:${URL_PASSWORD}@127.0.0.1:${relay.port}`;
  const result = await withRelay(url, (r) => r.send(mail({ to: ['bob@acme.test', 'gone@acme.test'] })));
  expect(result).toMatchObject({ ok: true, rejected: ['gone@acme.test'] });
});

test('550 is permanent, 451 temporary, a wrong password permanent: no error holds the password', async () => {
  const url = `smtp://${USER}:${URL_PASSWORD}@127.0.0.1:${relay.port}`;
  const gone = await withRelay(url, (r) => r.send(mail({ to: ['gone@acme.test'] })));
  expect(gone).toMatchObject({ ok: false, permanent: true, error: expect.stringContaining('550') });
  const full = await withRelay(url, (r) => r.send(mail({ to: ['full@acme.test'] })));
  expect(full).toMatchObject({ ok: false, permanent: false, error: expect.stringContaining('451') });
  const wrong = await withRelay(`smtp://${USER}:wrong${URL_PASSWORD}@127.0.0.1:${relay.port}`, (r) => r.send(mail()));
  expect(wrong).toMatchObject({ ok: false, permanent: true, error: expect.stringContaining('535') });
  for (const result of [gone, full, wrong]) {
    const error = (result as { error: string }).error;
    expect(error).not.toContain(PASSWORD);
    expect(error).not.toContain(URL_PASSWORD);
  }
});

test('nothing listening: temporary, and the error names neither the URL nor its password', async () => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const result = await withRelay(`smtp://${USER}:${URL_PASSWORD}@127.0.0.1:${port}`, (r) => r.send(mail()));
  expect(result).toMatchObject({ ok: false, permanent: false });
  const error = (result as { error: string }).error;
  expect(error).toMatch(/ECONNREFUSED|ECONNECTION|ESOCKET/);
  expect(error).not.toContain(PASSWORD);
  expect(error).not.toContain(URL_PASSWORD);
});

test('a relay that never answers: temporary, within the timeout', async () => {
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as AddressInfo;
  try {
    const r = relayFromUrl(`smtp://${USER}:${URL_PASSWORD}@127.0.0.1:${port}`, { timeoutMs: 300 })!;
    const started = Date.now();
    const result = await r.send(mail()).finally(() => r.close());
    expect(result).toMatchObject({ ok: false, permanent: false });
    expect(Date.now() - started).toBeLessThan(5_000);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('smtps:// with ?tls.rejectUnauthorized=false reaches a relay with a certificate of its own making', async () => {
  const tlsRelay = await startRelay(true);
  try {
    const result = await withRelay(`smtps://${USER}:${URL_PASSWORD}@127.0.0.1:${tlsRelay.port}?tls.rejectUnauthorized=false`, (r) => r.send(mail()));
    expect(result).toMatchObject({ ok: true });
    expect(tlsRelay.recorded).toHaveLength(1);
    // Without the parameter the certificate is refused: temporary (an operator can fix it), and still no password.
    const refused = await withRelay(`smtps://${USER}:${URL_PASSWORD}@127.0.0.1:${tlsRelay.port}`, (r) => r.send(mail()));
    expect(refused).toMatchObject({ ok: false, permanent: false });
    expect((refused as { error: string }).error).not.toContain(URL_PASSWORD);
  } finally {
    await closeServer(tlsRelay.server);
  }
});

test('an unusable URL is refused without repeating it', () => {
  for (const url of [
    `http://${USER}:${URL_PASSWORD}@host`,
    `smtp://${USER}:${URL_PASSWORD}@host?sendmail=true`,
    `smtp://${USER}:${URL_PASSWORD}@host?logger=true`,
    'not a url s3cr',
  ]) {
    let message = '';
    try {
      relayFromUrl(url);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).not.toBe('');
    expect(message).not.toContain(URL_PASSWORD);
    expect(message).not.toContain('s3cr');
  }
});
