// The WhatsApp channel end to end, on the store under test: a `whatsapp` connection's receiving
// URL answers Meta's subscription check and takes only deliveries signed with the app secret; a
// text message starts one run of the agent bound to the connection however often it is delivered;
// its reply goes to a Graph API recorder on loopback with the message's context; status callbacks
// update the sent message; outside the 24-hour window a reply is refused, saying why.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForAgentRunStatus } from '../helpers/runs';
import { startService, type TestService } from '../helpers/service';
import { storedWrite } from '../helpers/stored';
import type { components } from '../../generated/api';

type Schemas = components['schemas'];
type Message = Schemas['ChannelMessage'];

interface Recorded {
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

let graph: http.Server;
const recorded: Recorded[] = [];
let t: TestService;

beforeAll(async () => {
  graph = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      recorded.push({ path: req.url!, authorization: req.headers.authorization, body });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({ messaging_product: 'whatsapp', contacts: [{ input: body.to, wa_id: body.to }], messages: [{ id: `wamid.out-${recorded.length}` }] }),
      );
    });
  });
  await new Promise<void>((resolve) => graph.listen(0, '127.0.0.1', resolve));
  t = await startService({ WHATSAPP_GRAPH_URL: `http://127.0.0.1:${(graph.address() as AddressInfo).port}`, WHATSAPP_GRAPH_VERSION: 'v23.0' });
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => graph.close(resolve));
});

let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}`;
const APP_SECRET = 'meta-app-secret';

async function number(phoneNumberId = String(100000 + ++n)) {
  const ref = unique('whatsapp:line');
  const res = await t.client().PUT('/api/build/connections', {
    body: {
      ref,
      app: 'whatsapp',
      credentials: { kind: 'whatsapp', phone_number_id: phoneNumberId, access_token: 'EAAG-token', app_secret: APP_SECRET, verify_token: 'verify-me' },
    },
  });
  expect(res.response.status).toBe(201);
  const view = res.data!.data;
  expect(view.credentials).toEqual({ kind: 'whatsapp', phone_number_id: phoneNumberId });
  return { ref, phoneNumberId, url: view.receive_url!.replace('http://build.test', t.baseUrl) };
}

async function whatsappAgent(connection: string, approval: 'destructive' | 'write' = 'destructive') {
  const created = await t.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent(unique('Concierge')),
      max_steps: 4,
      tools: { apps: [], connections: 'all', disabled_tools: [], approval },
      whatsapp: { enabled: true, connection },
    },
  });
  expect(created.error).toBeUndefined();
  const active = await t.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: created.data!.data.document.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  return active.data!.data.document;
}

const delivery = (phoneNumberId: string, value: Record<string, unknown>) =>
  JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba-1',
        changes: [
          {
            field: 'messages',
            value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550001111', phone_number_id: phoneNumberId }, ...value },
          },
        ],
      },
    ],
  });

const textMessage = (phoneNumberId: string, text: string, id = `wamid.${crypto.randomUUID()}`, from = '16505551234') =>
  delivery(phoneNumberId, {
    contacts: [{ profile: { name: 'Sheena' }, wa_id: from }],
    messages: [{ from, id, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: text } }],
  });

const sign = (body: string, secret = APP_SECRET) => `sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}`;

async function post(url: string, body: string, signature = sign(body)) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature }, body });
  return { status: res.status, body: (await res.json()) as Schemas['ChannelDeliveryResponse'] & { error?: string } };
}

async function messagesOf(ref: string): Promise<Message[]> {
  return (await t.client().GET('/api/build/agents/{ref}/messages', { params: { path: { ref } } })).data!.data;
}

async function eventually(ref: string, check: (messages: Message[]) => boolean): Promise<Message[]> {
  const until = Date.now() + 10_000;
  for (;;) {
    const messages = await messagesOf(ref);
    if (check(messages)) return messages;
    if (Date.now() > until) throw new Error(`not reached: ${JSON.stringify(messages)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("Meta's subscription check: the verify token answers the challenge as text; a wrong one is 403; another app's URL is 404", async () => {
  const line = await number();
  const ok = await fetch(`${line.url}?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444`);
  expect(ok.status).toBe(200);
  expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
  expect(await ok.text()).toBe('1158201444');
  expect((await fetch(`${line.url}?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1`)).status).toBe(403);
  expect((await fetch(`${line.url}?hub.mode=unsubscribe&hub.verify_token=verify-me&hub.challenge=1`)).status).toBe(403);
  expect((await fetch(`${t.baseUrl}/events/rcv_nothing?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1`)).status).toBe(404);
});

test('one agent per number: a second agent naming the connection is 409; a connection that is not a whatsapp one is 400; enabled with none, no number yet', async () => {
  const line = await number();
  await whatsappAgent(line.ref);
  const second = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent(unique('Second')), whatsapp: { enabled: true, connection: line.ref } } });
  expect(second.response.status).toBe(409);
  expect(second.error!.error).toContain('body.whatsapp.connection');
  const kv = await t.client().PUT('/api/build/connections', { body: { ref: unique('kv:store'), app: 'kv', credentials: { kind: 'none' } } });
  const wrong = await t
    .client()
    .PUT('/api/build/agents', { body: { ...minimalAgent(unique('Third')), whatsapp: { enabled: true, connection: kv.data!.data.ref } } });
  expect(wrong.response.status).toBe(400);
  expect(wrong.error!.error).toContain(`body.whatsapp.connection: '${kv.data!.data.ref}' is a connection of app 'kv', not of 'whatsapp'`);
  const none = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent(unique('Fourth')), whatsapp: { enabled: true } } });
  expect(none.response.status).toBe(201);
});

test('a signed text message starts one run; its reply reaches the Graph API with the context; statuses update it', async () => {
  const line = await number();
  const agent = await whatsappAgent(line.ref);
  const wamid = `wamid.${crypto.randomUUID()}`;
  const res = await post(line.url, textMessage(line.phoneNumberId, 'Hi!\n/call whatsapp.reply {"text":"Hello Sheena, how can I help?"}', wamid));
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({
    channel: 'whatsapp',
    statuses: 0,
    messages: [{ agent: agent.slug, message_id: wamid, status: 'received', repeated: false }],
  });
  const run = await waitForAgentRun(t, res.body.data.messages[0]!.run_id!);
  expect(run).toMatchObject({ status: 'succeeded', source: 'whatsapp' });
  const messages = await eventually(agent.slug, (m) => m.some((x) => x.direction === 'sent' && x.status === 'sent'));
  const sent = messages.find((x) => x.direction === 'sent')!;
  const call = recorded.find(
    (r) => r.path === `/v23.0/${line.phoneNumberId}/messages` && (r.body.context as { message_id?: string } | undefined)?.message_id === wamid,
  )!;
  expect(call.authorization).toBe('Bearer EAAG-token');
  expect(call.body).toMatchObject({ messaging_product: 'whatsapp', to: '16505551234', type: 'text', text: { body: 'Hello Sheena, how can I help?' } });
  expect(sent.message_id).toMatch(/^wamid\.out-/);
  const status = (s: string) =>
    delivery(line.phoneNumberId, {
      statuses: [{ id: sent.message_id, status: s, timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: '16505551234' }],
    });
  expect((await post(line.url, status('read'))).body.data).toMatchObject({ statuses: 1, messages: [] });
  await post(line.url, status('delivered')); // late: read stays
  expect((await messagesOf(agent.slug)).find((x) => x.id === sent.id)!.status).toBe('read');
});

test('tampered, unsigned or signed with another secret: 401 and nothing starts; a repeat sent 10 times at once starts one run', async () => {
  const line = await number();
  const agent = await whatsappAgent(line.ref);
  const body = textMessage(line.phoneNumberId, 'Hello');
  expect((await post(line.url, body.replace('Hello', 'Hellp'), sign(body))).status).toBe(401);
  expect((await post(line.url, body, '')).status).toBe(401);
  expect((await post(line.url, body, sign(body, 'other-secret'))).status).toBe(401);
  expect(await messagesOf(agent.slug)).toHaveLength(0);
  const copies = await Promise.all(Array.from({ length: 10 }, () => post(line.url, body)));
  expect(copies.every((c) => c.status === 200)).toBe(true);
  const runIds = new Set(copies.map((c) => c.body.data.messages[0]!.run_id));
  expect(runIds.size).toBe(1);
  expect(copies.filter((c) => !c.body.data.messages[0]!.repeated)).toHaveLength(1);
  expect(await messagesOf(agent.slug)).toHaveLength(1);
});

test('a message that is not text is recorded and starts nothing', async () => {
  const line = await number();
  await whatsappAgent(line.ref);
  const image = delivery(line.phoneNumberId, {
    messages: [
      { from: '16505550000', id: `wamid.${crypto.randomUUID()}`, timestamp: String(Math.floor(Date.now() / 1000)), type: 'image', image: { id: 'media-1' } },
    ],
  });
  const res = await post(line.url, image);
  expect(res.body.data.messages[0]).toMatchObject({ status: 'suppressed', run_id: null, reason: 'a image message: the agent reads text messages only' });
});

test('past the 24-hour window a free-form reply is refused, saying so, and nothing is queued', async () => {
  const line = await number();
  const agent = await whatsappAgent(line.ref, 'write'); // the reply waits for approval: the window closes meanwhile
  const wamid = `wamid.${crypto.randomUUID()}`;
  const res = await post(line.url, textMessage(line.phoneNumberId, '/call whatsapp.reply {"text":"Late answer"}', wamid, '16505559999'));
  const runId = res.body.data.messages[0]!.run_id!;
  const parked = await waitForAgentRunStatus(t, runId, 'awaiting_approval');
  const yesterday = new Date(Date.now() - 25 * 3_600_000).toISOString();
  expect(await storedWrite(t.config, 'UPDATE channel_messages SET created_at = ? WHERE message_id = ?', [yesterday, wamid])).toBe(1);
  const decided = await t.client().POST('/api/build/runs/{runId}/approvals/{callId}', {
    params: { path: { runId, callId: (parked as { tool_calls: { id: string }[] }).tool_calls[0]!.id } },
    body: { decision: 'approve' },
  });
  expect(decided.response.status).toBeLessThan(300);
  const run = await waitForAgentRun(t, runId);
  expect(run.tool_calls[0]).toMatchObject({ tool: 'whatsapp.reply', status: 'failed' });
  expect(JSON.stringify(run.tool_calls[0])).toContain('24-hour');
  expect((await messagesOf(agent.slug)).filter((m) => m.direction === 'sent')).toHaveLength(0);
});

test("Meta sends every number of an app to one URL: a message to another number of the workspace is that number's agent's; a number of no connection starts nothing", async () => {
  const first = await number();
  const second = await number();
  await whatsappAgent(first.ref);
  const other = await whatsappAgent(second.ref);
  const wamid = `wamid.${crypto.randomUUID()}`;
  const res = await post(first.url, textMessage(second.phoneNumberId, '/call whatsapp.reply {"text":"From the second line."}', wamid));
  expect(res.body.data.messages).toMatchObject([{ agent: other.slug, status: 'received' }]);
  await eventually(other.slug, (m) => m.some((x) => x.direction === 'sent' && x.status === 'sent'));
  expect(recorded.find((r) => (r.body.context as { message_id?: string } | undefined)?.message_id === wamid)!.path).toBe(
    `/v23.0/${second.phoneNumberId}/messages`,
  );
  const stranger = await post(first.url, textMessage('999999999', 'Hello?'));
  expect(stranger.body.data).toMatchObject({ messages: [], statuses: 0 });
});
