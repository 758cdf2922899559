// The SMTP door (src/channels/email/smtp-listener.ts) on loopback, with nodemailer as the sending
// server and raw sockets where a client must misbehave: a message reaches onMessage whole with its
// envelope; an unknown recipient, one recipient too many, a message too big, a connection too many
// and a failing onMessage each get their SMTP answer, and onMessage hears nothing of them.
import net from 'node:net';
import nodemailer from 'nodemailer';
import { type ReceivedMessage, type SmtpListener, type SmtpListenerOptions, startSmtpListener } from '../../src/channels/email/smtp-listener';

const AGENTS = new Set(['support@agents.test', 'sales@agents.test', 'ops@agents.test']);

let received: ReceivedMessage[];
let failNext: boolean;
const listeners: SmtpListener[] = [];

async function listen(overrides: Partial<SmtpListenerOptions> = {}): Promise<SmtpListener> {
  const listener = await startSmtpListener({
    host: '127.0.0.1',
    port: 0,
    serverName: 'mx.agents.test',
    maxBytes: 64 * 1024,
    maxRecipients: 2,
    maxClients: 5,
    socketTimeoutMs: 5_000,
    closeTimeoutMs: 200,
    acceptsRecipient: async (address) => (address === 'busy@agents.test' ? 'temporary' : AGENTS.has(address)),
    onMessage: async (message) => {
      if (failNext) throw new Error('the store is down (with a secret: hunter2)');
      received.push(message);
    },
    ...overrides,
  });
  listeners.push(listener);
  return listener;
}

let smtp: SmtpListener;
beforeAll(async () => {
  smtp = await listen();
});
beforeEach(() => {
  received = [];
  failNext = false;
});
afterAll(async () => {
  await Promise.all(listeners.map((l) => l.close()));
});

const transport = (port: number) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'mail.acme.test' });

type Envelope = { from: string; to: string[] };
async function send(envelope: Envelope, text = 'My order is late.') {
  const client = transport(smtp.port);
  try {
    return await client.sendMail({ envelope, from: 'Bob <bob@acme.test>', to: envelope.to.join(', '), subject: 'Help', text, messageId: '<m1@acme.test>' });
  } finally {
    client.close();
  }
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected the send to fail');
    },
    (error: { responseCode?: number; response?: string }) => error,
  );

test('a message reaches onMessage whole, with its envelope (recipients lower case) and the client', async () => {
  const info = await send({ from: 'bounce@acme.test', to: ['Support@Agents.test'] });
  expect(info.response).toMatch(/^250 /);
  expect(received).toHaveLength(1);
  const [message] = received;
  expect(message).toMatchObject({ mailFrom: 'bounce@acme.test', recipients: ['support@agents.test'], remoteAddress: '127.0.0.1', helo: 'mail.acme.test' });
  const raw = message!.raw.toString();
  expect(raw).toContain('Message-ID: <m1@acme.test>');
  expect(raw).toContain('My order is late.');
});

test('an unknown recipient is 550 5.1.1 and nothing is received', async () => {
  const error = await failure(send({ from: 'bob@acme.test', to: ['nobody@agents.test'] }));
  expect(error.responseCode).toBe(550);
  expect(error.response).toContain('5.1.1 <nobody@agents.test>: no such agent here');
  expect(received).toHaveLength(0);
});

test('a recipient the caller cannot check now is 451: the sender retries', async () => {
  const error = await failure(send({ from: 'bob@acme.test', to: ['busy@agents.test'] }));
  expect(error.responseCode).toBe(451);
  expect(received).toHaveLength(0);
});

test('one recipient over the bound is 452; the message goes to the accepted ones', async () => {
  const info = await send({ from: 'bob@acme.test', to: ['support@agents.test', 'sales@agents.test', 'ops@agents.test'] });
  expect(info.accepted).toEqual(['support@agents.test', 'sales@agents.test']);
  expect(info.rejected).toEqual(['ops@agents.test']);
  expect(info.rejectedErrors?.[0]).toMatchObject({ responseCode: 452 });
  expect(received.map((m) => m.recipients)).toEqual([['support@agents.test', 'sales@agents.test']]);
});

test('a message over maxBytes is 552 and nothing is received', async () => {
  const error = await failure(send({ from: 'bob@acme.test', to: ['support@agents.test'] }, 'x'.repeat(100 * 1024)));
  expect(error.responseCode).toBe(552);
  expect(received).toHaveLength(0);
});

test("the null return path is mailFrom ''", async () => {
  await send({ from: '', to: ['support@agents.test'] });
  expect(received.map((m) => m.mailFrom)).toEqual(['']);
});

test('onMessage failing is 451 4.3.0, and its reason is not told to the client', async () => {
  failNext = true;
  const error = await failure(send({ from: 'bob@acme.test', to: ['support@agents.test'] }));
  expect(error.responseCode).toBe(451);
  expect(error.response).toContain('4.3.0');
  expect(error.response).not.toContain('hunter2');
});

/** A raw client: its socket and the first line the server says. */
function connect(port: number): Promise<{ socket: net.Socket; greeting: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.once('data', (line: string) => resolve({ socket, greeting: line }));
  });
}

test('one connection over maxClients is greeted with 421 and closed', async () => {
  const small = await listen({ maxClients: 2 });
  const open = [await connect(small.port), await connect(small.port)];
  try {
    expect(open.map((c) => c.greeting.slice(0, 4))).toEqual(['220 ', '220 ']);
    const extra = await connect(small.port);
    expect(extra.greeting).toMatch(/^421 /);
    await new Promise((resolve) => (extra.socket.closed ? resolve(null) : extra.socket.once('close', resolve)));
  } finally {
    for (const c of open) c.socket.destroy();
  }
});

test('close() ends a session left open within its bound', async () => {
  const closing = await listen({ closeTimeoutMs: 100 });
  const idle = await connect(closing.port);
  const ended = new Promise((resolve) => idle.socket.once('close', resolve));
  const started = Date.now();
  await closing.close();
  await ended;
  expect(Date.now() - started).toBeLessThan(3_000);
});
