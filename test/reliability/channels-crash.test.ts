// The outbox across a kill (issue 47): mail that agents' runs queued while the relay was down is
// sent once the relay is back, by the server started again after a SIGKILL between the outbox's
// write and the send: every reply reaches the relay exactly once (by its Message-ID), and every
// row says `sent`.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { DnsServer } from '../helpers/dns-server';
import { minimalAgent } from '../helpers/fixtures';
import { sendMail, startMailDns, startRelay, type RelayRecorder } from '../helpers/mail-peers';
import { storedRows } from '../helpers/stored';
import { startServer, type ServerProcess } from './server';

const MAILS = 5;

/** A loopback port free now (for the SMTP listener, and for the relay to come back on). */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

let dns: DnsServer;
let relay: RelayRecorder;
let s: ServerProcess;
let smtpPort: number;

beforeAll(async () => {
  dns = await startMailDns();
  relay = await startRelay();
  smtpPort = await freePort();
  s = await startServer({
    EMAIL_DOMAIN: 'agents.test',
    EMAIL_DNS_SERVERS: dns.address,
    SMTP_PORT: String(smtpPort),
    SMTP_RELAY_URL: relay.url,
    CHANNEL_RETRY_BASE_SECONDS: '1',
  });
});
afterAll(async () => {
  await s.dispose();
  await relay.close();
  await dns.close();
});

test('replies queued while the relay is down, the server killed before sending them: after a restart each is sent exactly once', async () => {
  const created = await s.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent('Support'),
      max_steps: 4,
      tools: { apps: [], connections: 'all', disabled_tools: [], approval: 'destructive' },
      email: { enabled: true, allowed_senders: ['@acme.test'] },
    },
  });
  const agent = created.data!.data.document;
  await s.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: agent.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  // The relay goes away (its port kept): every first attempt fails, and the mail waits in the outbox.
  const relayPort = Number(new URL(relay.url).port);
  await relay.close();
  for (let i = 0; i < MAILS; i++) {
    await sendMail(smtpPort, { from: 'bob@acme.test', to: agent.email.address!, subject: `Order ${i}`, text: `/call email.reply {"text":"Answer ${i}"}` });
  }
  const queued = async () => storedRows<{ status: string; attempts: number }>(s, "SELECT status, attempts FROM channel_messages WHERE direction = 'sent'");
  for (let waited = 0; (await queued()).length < MAILS; waited += 100) {
    if (waited > 15_000) throw new Error('the replies were not queued');
    await new Promise((r) => setTimeout(r, 100));
  }
  await s.kill('SIGKILL');
  expect((await queued()).every((row) => row.status === 'queued')).toBe(true);

  relay = await startRelay('relay-user', 'relay-pass', relayPort);
  await s.restart();
  for (let waited = 0; !(await queued()).every((row) => row.status === 'sent'); waited += 200) {
    if (waited > 30_000) throw new Error(`not sent: ${JSON.stringify(await queued())}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const ids = relay.received.map((r) => r.mail.messageId);
  expect(ids).toHaveLength(MAILS);
  expect(new Set(ids).size).toBe(MAILS);
  const rows = await storedRows<{ message_id: string }>(s, "SELECT message_id FROM channel_messages WHERE direction = 'sent'");
  expect(new Set(rows.map((r) => r.message_id))).toEqual(new Set(ids));
}, 90_000);
