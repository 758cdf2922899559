// Sending a WhatsApp text through Graph (src/channels/whatsapp/graph-client.ts), against a real
// HTTP server on loopback that records each request and answers as the test says: Meta's success
// and error bodies, a 500, an answer slower than the timeout, an answer too big to read.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendWhatsAppText, type WhatsAppTextSend } from '../../src/channels/whatsapp/graph-client';

interface Recorded {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const TOKEN = 'EAAG-secret-access-token-1234567890';
const recorded: Recorded[] = [];
let answer: (res: http.ServerResponse, req: Recorded) => void = (res) => res.end();
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      recorded.push(seen);
      answer(res, seen);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  recorded.length = 0;
});

const json = (status: number, body: unknown) => (res: http.ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const send = (overrides: Partial<WhatsAppTextSend> = {}) =>
  sendWhatsAppText({
    graphBaseUrl: base,
    version: 'v23.0',
    phoneNumberId: '106540352242922',
    accessToken: TOKEN,
    to: '16505551234',
    text: 'It comes in blue and green.',
    replyTo: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
    timeoutMs: 2000,
    ...overrides,
  });

const SENT = { messaging_product: 'whatsapp', contacts: [{ input: '16505551234', wa_id: '16505551234' }], messages: [{ id: 'wamid.sent-1' }] };
const WINDOW_CLOSED = {
  error: {
    message: '(#131047) Re-engagement message',
    type: 'OAuthException',
    code: 131047,
    error_data: {
      messaging_product: 'whatsapp',
      details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
    },
  },
};

test('a reply is POSTed to /{version}/{phone-number-id}/messages with the bearer token and its context; the wamid comes back', async () => {
  answer = json(200, SENT);
  await expect(send()).resolves.toEqual({ ok: true, messageId: 'wamid.sent-1' });
  expect(recorded).toHaveLength(1);
  const [request] = recorded;
  expect(request!.method).toBe('POST');
  expect(request!.path).toBe('/v23.0/106540352242922/messages');
  expect(request!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  expect(request!.headers['content-type']).toBe('application/json');
  expect(JSON.parse(request!.body)).toEqual({
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: '16505551234',
    type: 'text',
    text: { preview_url: false, body: 'It comes in blue and green.' },
    context: { message_id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=' },
  });
});

test('a message that replies to nothing has no context; a base URL with a path and a trailing slash keeps its path', async () => {
  answer = json(200, SENT);
  await expect(send({ replyTo: null, graphBaseUrl: `${base}/graph/` })).resolves.toEqual({ ok: true, messageId: 'wamid.sent-1' });
  expect(recorded[0]!.path).toBe('/graph/v23.0/106540352242922/messages');
  expect(JSON.parse(recorded[0]!.body)).not.toHaveProperty('context');
});

test("Graph's 131047 is the closed customer-service window: not retried, and the error says why", async () => {
  answer = json(400, WINDOW_CLOSED);
  const result = await send();
  expect(result).toMatchObject({ ok: false, retry: false, windowClosed: true });
  if (result.ok) return;
  expect(result.error).toContain('24-hour customer-service window is closed');
  expect(result.error).toContain('error 131047: (#131047) Re-engagement message: Message failed to send because more than 24 hours');
  expect(result.error).toContain('the customer must write again first, or the business must send an approved template message');
});

test('a 500, a 429, and the rate-limit and transient codes are retried', async () => {
  answer = json(500, { error: { message: 'An unknown error occurred', code: 1 } });
  await expect(send()).resolves.toEqual({ ok: false, retry: true, windowClosed: false, error: 'Graph answered 500: error 1: An unknown error occurred' });
  answer = (res) => res.writeHead(502).end('<html>Bad gateway</html>');
  await expect(send()).resolves.toEqual({ ok: false, retry: true, windowClosed: false, error: 'Graph answered 502: <html>Bad gateway</html>' });
  answer = json(429, { error: { message: 'slow down' } });
  await expect(send()).resolves.toMatchObject({ ok: false, retry: true });
  for (const code of [130429, 131056, 131000]) {
    answer = json(400, { error: { message: 'limited', code } });
    await expect(send()).resolves.toMatchObject({ ok: false, retry: true, windowClosed: false, error: `Graph answered 400: error ${code}: limited` });
  }
});

test('other 4xx are final, and the error never shows the access token even when Graph echoes it', async () => {
  answer = json(400, { error: { message: '(#100) Invalid parameter', code: 100, error_data: { details: 'Parameter value is not valid' } } });
  await expect(send()).resolves.toEqual({
    ok: false,
    retry: false,
    windowClosed: false,
    error: 'Graph answered 400: error 100: (#100) Invalid parameter: Parameter value is not valid',
  });
  answer = json(401, { error: { message: `Malformed access token ${TOKEN}`, code: 190 } });
  const result = await send();
  expect(result).toMatchObject({ ok: false, retry: false });
  expect(JSON.stringify(result)).not.toContain(TOKEN);
  expect(!result.ok && result.error).toBe('Graph answered 401: error 190: Malformed access token [access token]');
});

test("Graph's error text is bounded to 300 characters", async () => {
  answer = json(400, { error: { message: 'm'.repeat(5000), code: 100 } });
  const result = await send();
  expect(!result.ok && result.error).toBe(`Graph answered 400: ${`error 100: ${'m'.repeat(5000)}`.slice(0, 300)}`);
});

test('an answer slower than the timeout is retried', async () => {
  answer = () => {}; // never answers
  const started = Date.now();
  await expect(send({ timeoutMs: 200 })).resolves.toEqual({ ok: false, retry: true, windowClosed: false, error: 'Graph did not answer within 200 ms' });
  expect(Date.now() - started).toBeLessThan(1500);
});

test('a 200 whose body stops coming is final: the message was most likely sent', async () => {
  answer = (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"messaging_product":');
  };
  const result = await send({ timeoutMs: 200 });
  expect(result).toMatchObject({ ok: false, retry: false, windowClosed: false });
  expect(!result.ok && result.error).toBe('Graph did not answer within 200 ms (after status 200); the message may have been sent');
});

test('an oversized answer is not read past 64 KiB', async () => {
  let written = 0;
  let closed: Promise<void> = Promise.resolve();
  answer = (res) => {
    closed = new Promise((resolve) => res.on('close', () => resolve()));
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const pump = () => {
      while (written < 64 * 1024 * 1024 && !res.destroyed) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  };
  const result = await send();
  expect(result).toEqual({
    ok: false,
    retry: false,
    windowClosed: false,
    error: 'Graph answered 200 with more than 65536 bytes; the message may have been sent',
  });
  await closed; // the client hung up instead of reading 64 MiB
  expect(written).toBeLessThan(64 * 1024 * 1024);
  // An oversized error answer is still classified by its status.
  answer = (res) => res.writeHead(503, { 'content-length': String(1024 * 1024) }).end(Buffer.alloc(1024 * 1024, 0x61));
  await expect(send()).resolves.toEqual({ ok: false, retry: true, windowClosed: false, error: 'Graph answered 503: an answer over 65536 bytes' });
});

test('a 2xx without messages[0].id, and a redirect, are final; the redirect is not followed', async () => {
  answer = json(200, { messaging_product: 'whatsapp', messages: [] });
  await expect(send()).resolves.toMatchObject({ ok: false, retry: false, error: 'Graph answered 200 without messages[0].id; the message may have been sent' });
  recorded.length = 0;
  answer = (res) => res.writeHead(302, { location: `${base}/elsewhere` }).end();
  await expect(send()).resolves.toEqual({ ok: false, retry: false, windowClosed: false, error: 'Graph answered a redirect (302), which is not followed' });
  expect(recorded.map((r) => r.path)).toEqual(['/v23.0/106540352242922/messages']);
});

test('a refused connection is retried, naming its code', async () => {
  const closedServer = http.createServer();
  await new Promise<void>((resolve) => closedServer.listen(0, '127.0.0.1', resolve));
  const port = (closedServer.address() as AddressInfo).port;
  await new Promise((resolve) => closedServer.close(resolve));
  const result = await send({ graphBaseUrl: `http://127.0.0.1:${port}` });
  expect(result).toMatchObject({ ok: false, retry: true, windowClosed: false });
  expect(!result.ok && result.error).toContain('ECONNREFUSED');
});

test('a text over 4096 characters, or options that cannot be sent, are refused before any request', async () => {
  answer = json(200, SENT);
  await expect(send({ text: 'a'.repeat(4097) })).resolves.toEqual({
    ok: false,
    retry: false,
    windowClosed: false,
    error: "text: at most 4096 characters (WhatsApp's limit on a text message)",
  });
  await expect(send({ text: '' })).resolves.toMatchObject({ ok: false, retry: false });
  await expect(send({ phoneNumberId: '../../me' })).resolves.toMatchObject({ ok: false, retry: false, error: expect.stringContaining('phoneNumberId') });
  await expect(send({ version: 'v23.0/../x' })).resolves.toMatchObject({ ok: false, retry: false, error: expect.stringContaining('version') });
  await expect(send({ graphBaseUrl: 'file:///etc' })).resolves.toMatchObject({ ok: false, retry: false, error: expect.stringContaining('graphBaseUrl') });
  const badToken = await send({ accessToken: `${TOKEN}\r\nX-Injected: 1` });
  expect(badToken).toMatchObject({ ok: false, retry: false });
  expect(JSON.stringify(badToken)).not.toContain(TOKEN);
  expect(recorded).toHaveLength(0);
  // Characters, not UTF-16 units: 4096 emoji are within the limit.
  await expect(send({ text: '😀'.repeat(4096) })).resolves.toEqual({ ok: true, messageId: 'wamid.sent-1' });
});
