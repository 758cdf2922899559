// Event subscriptions end to end in-process, on the store under test (docs/events.md): endpoints and
// their secrets shown once; a receiver on loopback that verifies every delivery with the
// `standardwebhooks` library sees each event of agents, workflows and runs (test runs included,
// parked ones too), numbered per subject; filters; a rotation signs with both secrets; failures are
// retried on the schedule and a recovered receiver gets them; a 410 disables the endpoint; a
// delivery is redelivered with its webhook-id; two workspaces never cross; bad URLs are refused; an
// eval's end and a WhatsApp message received are delivered too.
import crypto from 'node:crypto';
import { startService, type TestService } from '../helpers/service';
import { startEventReceiver, type EventReceiver, type ReceivedEvent } from '../helpers/event-receiver';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForWorkflowRun } from '../helpers/runs';
import { storedValue } from '../helpers/stored';

let t: TestService;
const receivers: EventReceiver[] = [];
beforeAll(async () => {
  t = await startService({ HTTP_TOOL_ALLOW_PRIVATE: '1', EVENT_RETRY_SCHEDULE_SECONDS: '1,1', EVENT_ENDPOINTS_PER_WORKSPACE: '4' });
});
afterAll(async () => {
  await t.close();
  await Promise.all(receivers.map((r) => r.close()));
});

let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}`;

async function receiver(): Promise<EventReceiver> {
  const r = await startEventReceiver();
  receivers.push(r);
  return r;
}

/** An endpoint of `workspace` for `types` at a fresh receiver that holds its secret. */
async function subscribed(types: string[] = ['*'], workspace = unique('ws')) {
  const r = await receiver();
  const token = t.token({ workspace });
  const res = await t.client(token).PUT('/api/build/event-endpoints', { body: { url: r.url, event_types: types as never, description: 'test' } });
  expect([res.response.status, res.error]).toEqual([201, undefined]);
  r.secrets.push(res.data!.data.secret);
  return { r, token, workspace, endpoint: res.data!.data, etag: res.response.headers.get('etag')! };
}

async function until(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the awaited state never came');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ofSubject = (received: ReceivedEvent[], key: string, id: string) => received.filter((e) => e.event.data[key] === id);

async function activeAgent(token: string, approval: 'write' | 'destructive' = 'destructive') {
  const created = await t.client(token).PUT('/api/build/agents', {
    body: { ...minimalAgent(unique('Agent')), max_steps: 5, tools: { apps: ['kv', 'core'], connections: 'all', disabled_tools: [], approval } },
  });
  expect(created.response.status).toBe(201);
  const doc = created.data!.data.document;
  const active = await t.client(token).POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: doc.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  expect(active.response.status).toBe(200);
  return active.data!.data.document;
}

test('an endpoint shows its secret once; reads and lists never do; limits and URLs are checked', async () => {
  const { endpoint, token, etag } = await subscribed(['run.finished']);
  expect(endpoint).toMatchObject({ status: 'enabled', event_types: ['run.finished'], teams: [], disabled_reason: null, previous_secret_expires_at: null });
  expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
  expect(endpoint.secret.startsWith(endpoint.secret_prefix)).toBe(true);
  const read = await t.client(token).GET('/api/build/event-endpoints/{endpointId}', { params: { path: { endpointId: endpoint.id } } });
  expect(read.response.headers.get('etag')).toBe(etag);
  expect(read.data!.data).not.toHaveProperty('secret');
  const list = await t.client(token).GET('/api/build/event-endpoints');
  expect(list.data!.data.map((e) => e.id)).toEqual([endpoint.id]);
  expect(JSON.stringify(list.data)).not.toContain(endpoint.secret);
  // Stored sealed: the secret is nowhere in the database in clear.
  expect(await storedValue<number>(t.config, 'SELECT COUNT(*) FROM event_endpoints WHERE secret_sealed LIKE ?', [`%${endpoint.secret.slice(6)}%`])).toBe(0);

  for (const [url, rule] of [
    ['ftp://example.com/x', 'must be an https URL'],
    ['https://user:pw@example.com/x', 'must not carry a user name or password'],
    ['https://no-such-host.invalid/x', 'its host no-such-host.invalid does not resolve'],
    ['not a url', 'must be an absolute URL'],
  ]) {
    const bad = await t.client(token).PUT('/api/build/event-endpoints', { body: { url: url!, event_types: ['*'] } });
    expect([bad.response.status, bad.error?.error]).toEqual([400, expect.stringContaining(`body.url: ${rule}`)]);
  }
  const typo = await t.client(token).PUT('/api/build/event-endpoints', { body: { url: 'https://example.com', event_types: ['run.done' as never] } });
  expect(typo.response.status).toBe(400);
  for (let i = 0; i < 3; i++) {
    expect((await t.client(token).PUT('/api/build/event-endpoints', { body: { url: 'http://127.0.0.1:9/x', event_types: ['*'] } })).response.status).toBe(201);
  }
  const over = await t.client(token).PUT('/api/build/event-endpoints', { body: { url: 'http://127.0.0.1:9/x', event_types: ['*'] } });
  expect([over.response.status, over.error?.error]).toEqual([409, expect.stringContaining('EVENT_ENDPOINTS_PER_WORKSPACE')]);
});

test("an agent's life and its test run arrive signed, in order per subject; another workspace sees none of it", async () => {
  const { r, token } = await subscribed(['*']);
  const other = await subscribed(['*']);
  const agent = await activeAgent(token);
  const started = await t.client(token).POST('/api/build/agents/{ref}/test', { params: { path: { ref: agent.id } }, body: { prompt: 'hello' } });
  const runId = started.data!.data.run_id;
  const run = await waitForAgentRun(t, runId, token);
  await r.waitFor((got) => ofSubject(got, 'run_id', runId).some((e) => e.event.type === 'run.finished'));
  expect(r.received.every((e) => e.verifiedWith[0] === true)).toBe(true);
  expect(
    ofSubject(r.received, 'agent_id', agent.id)
      .filter((e) => e.event.type.startsWith('agent.'))
      .map((e) => [e.event.type, e.event.data.sequence]),
  ).toEqual([
    ['agent.created', 1],
    ['agent.status_changed', 2],
  ]);
  const runEvents = ofSubject(r.received, 'run_id', runId).sort((a, b) => a.event.data.sequence - b.event.data.sequence);
  expect(runEvents.map((e) => [e.event.type, e.event.data.sequence, e.event.data.status])).toEqual([
    ['run.queued', 1, 'queued'],
    ['run.started', 2, 'running'],
    ['run.finished', 3, run.status],
  ]);
  expect(runEvents[2]!.event.data).toEqual({
    run_id: runId,
    kind: 'agent',
    agent_id: agent.id,
    version: 2,
    status: run.status,
    source: 'test',
    test: true,
    sequence: 3,
  });
  expect(new Set(r.received.map((e) => e.id)).size).toBe(r.received.length);
  expect(other.r.received).toEqual([]);
});

test('a parked run tells it waits; workflows are created, replaced, run and deleted; a filter lets only its types through', async () => {
  const { r, token } = await subscribed(['*']);
  const only = await receiver();
  const filtered = await t.client(token).PUT('/api/build/event-endpoints', { body: { url: only.url, event_types: ['run.finished', 'workflow.deleted'] } });
  only.secrets.push(filtered.data!.data.secret);
  const agent = await activeAgent(token, 'write');
  const parked = await t.client(token).POST('/api/build/agents/{ref}/test', {
    params: { path: { ref: agent.id } },
    body: { prompt: '/call kv.set {"key":"k","value":1}' },
  });
  const runId = parked.data!.data.run_id;
  await until(async () => (await t.client(token).GET('/api/build/runs/{runId}', { params: { path: { runId } } })).data?.data.status === 'awaiting_approval');
  await r.waitFor((got) => ofSubject(got, 'run_id', runId).some((e) => e.event.type === 'run.awaiting_approval'));

  const slug = unique('wf');
  const wf = await t.client(token).PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug, name: slug, steps: [{ id: 'a', kind: 'tool', tool: 'core.echo', args: { x: 1 } }] },
  });
  const doc = wf.data!.data.document;
  const replaced = await t.client(token).PUT('/api/build/workflows/{ref}', {
    params: { path: { ref: slug }, header: { 'If-Match': wf.response.headers.get('etag')! } },
    body: { ...doc, name: `${slug} 2` } as never,
  });
  expect(replaced.response.status).toBe(200);
  const wfRun = await t.client(token).POST('/api/build/workflows/{ref}/test', { params: { path: { ref: slug } }, body: {} });
  await waitForWorkflowRun(t, wfRun.data!.data.run_id, token);
  const deleted = await t.client(token).DELETE('/api/build/workflows/{ref}', { params: { path: { ref: slug } } });
  expect(deleted.response.status).toBe(200);
  await r.waitFor((got) => got.some((e) => e.event.type === 'workflow.deleted' && e.event.data.slug === slug));
  expect(
    ofSubject(r.received, 'slug', slug)
      .filter((e) => e.event.type.startsWith('workflow.'))
      .map((e) => [e.event.type, e.event.data.sequence, e.event.data.version]),
  ).toEqual([
    ['workflow.created', 1, 1],
    ['workflow.replaced', 2, 2],
    ['workflow.deleted', 3, 2],
  ]);
  await r.waitFor((got) => ofSubject(got, 'run_id', wfRun.data!.data.run_id).some((e) => e.event.type === 'run.finished'));
  await only.waitFor((got) => got.some((e) => e.event.type === 'workflow.deleted'));
  expect(new Set(only.received.map((e) => e.event.type))).toEqual(new Set(['run.finished', 'workflow.deleted']));
});

async function deliveries(
  token: string,
  endpointId: string,
  query: { status?: 'pending' | 'delivering' | 'succeeded' | 'failed'; limit?: number; cursor?: string } = {},
) {
  const res = await t.client(token).GET('/api/build/event-endpoints/{endpointId}/deliveries', { params: { path: { endpointId }, query } });
  expect(res.response.status).toBe(200);
  return res;
}

test('test, rotation: during the grace both secrets sign; after it only the new one; a zero grace drops the old at once', async () => {
  const { r, token, endpoint } = await subscribed(['agent.created']);
  const endpointId = endpoint.id;
  const test = await t.client(token).POST('/api/build/event-endpoints/{endpointId}/test', { params: { path: { endpointId } } });
  // Queued: pending, or already claimed by the sender's own timer.
  expect([test.response.status, test.data?.data.event_type, test.data?.data.status]).toEqual([
    202,
    'webhook.test',
    expect.stringMatching(/^(pending|delivering)$/),
  ]);
  await r.waitFor((got) => got.some((e) => e.event.type === 'webhook.test'));
  expect(r.received[0]!.event.data).toEqual({ endpoint_id: endpointId, sequence: 1 });
  expect(r.received[0]!.signature.split(' ')).toHaveLength(1);

  const rotated = await t.client(token).POST('/api/build/event-endpoints/{endpointId}/rotate-secret', { params: { path: { endpointId } }, body: {} });
  expect(rotated.response.status).toBe(200);
  const fresh = rotated.data!.data;
  expect(fresh.secret).not.toBe(endpoint.secret);
  expect(Date.parse(fresh.previous_secret_expires_at!)).toBeGreaterThan(Date.now() + 86_000_000);
  r.secrets.push(fresh.secret);
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Rotated')) });
  const during = (await r.waitFor((got) => got.some((e) => e.event.type === 'agent.created'))).find((e) => e.event.type === 'agent.created')!;
  expect(during.signature.split(' ')).toHaveLength(2);
  expect(during.verifiedWith).toEqual([true, true]);

  const again = await t.client(token).POST('/api/build/event-endpoints/{endpointId}/rotate-secret', {
    params: { path: { endpointId } },
    body: { previous_valid_for_seconds: 0 },
  });
  expect(again.data!.data.previous_secret_expires_at).toBeNull();
  r.secrets.push(again.data!.data.secret);
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Rotated')) });
  const after = (await r.waitFor((got) => got.filter((e) => e.event.type === 'agent.created').length === 2)).filter(
    (e) => e.event.type === 'agent.created',
  )[1]!;
  expect(after.verifiedWith).toEqual([false, false, true]);
  const read = JSON.stringify((await t.client(token).GET('/api/build/event-endpoints/{endpointId}', { params: { path: { endpointId } } })).data);
  for (const secret of r.secrets) expect(read).not.toContain(secret);
});

test('a failing receiver: retried on the schedule with each attempt logged, then delivered once it recovers; a redelivery keeps the webhook-id', async () => {
  const { r, token, endpoint } = await subscribed(['agent.created']);
  let failures = 2;
  r.respond = () => (failures-- > 0 ? { status: 503, headers: { 'retry-after': '0' }, body: 'x'.repeat(5000) } : { status: 204 });
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Flaky')) });
  await r.waitFor((got) => got.length === 1);
  // Waiting for its retry (a second away): not ended, so not redeliverable.
  const [waiting] = (await deliveries(token, endpoint.id)).data!.data;
  const early = await t.client(token).POST('/api/build/event-endpoints/{endpointId}/deliveries/{deliveryId}/redeliver', {
    params: { path: { endpointId: endpoint.id, deliveryId: waiting!.id } },
  });
  expect([early.response.status, early.error?.error]).toEqual([409, expect.stringContaining('has not ended')]);
  await r.waitFor((got) => got.some((e) => e.answered === 204), 15_000);
  expect(new Set(r.received.map((e) => e.id)).size).toBe(1); // one event, three attempts
  expect(new Set(r.received.map((e) => e.timestamp)).size).toBeGreaterThan(1); // signed afresh each time
  const page = await deliveries(token, endpoint.id);
  await until(async () => (await deliveries(token, endpoint.id)).data!.data[0]!.status === 'succeeded');
  const [delivery] = (await deliveries(token, endpoint.id)).data!.data;
  expect(page.data!.data).toHaveLength(1);
  expect(delivery!.attempts.map((a) => a.status_code)).toEqual([503, 503, 204]);
  expect(delivery!.attempts[0]!.error).toBe('the receiver answered 503');
  expect(Buffer.byteLength(delivery!.attempts[0]!.response_prefix!)).toBe(1024);
  expect(delivery!.next_attempt_at).toBeNull();

  const redelivered = await t.client(token).POST('/api/build/event-endpoints/{endpointId}/deliveries/{deliveryId}/redeliver', {
    params: { path: { endpointId: endpoint.id, deliveryId: delivery!.id } },
  });
  expect(redelivered.response.status).toBe(202);
  await r.waitFor((got) => got.length === 4);
  expect(r.received[3]!.id).toBe(r.received[0]!.id);
  await until(async () => (await deliveries(token, endpoint.id)).data!.data[0]!.attempts.length === 4);
});

test('used-up retries fail the delivery; 410 disables the endpoint, which then receives nothing until enabled again', async () => {
  const { r, token, endpoint } = await subscribed(['agent.created']);
  r.respond = () => ({ status: 500 });
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Doomed')) });
  await until(async () => (await deliveries(token, endpoint.id, { status: 'failed' })).data!.data.length === 1, 15_000);
  expect(r.received).toHaveLength(3); // the first attempt and the schedule's two retries

  r.respond = () => ({ status: 410 });
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Gone')) });
  await until(
    async () =>
      (await t.client(token).GET('/api/build/event-endpoints/{endpointId}', { params: { path: { endpointId: endpoint.id } } })).data!.data.status ===
      'disabled',
  );
  const disabled = await t.client(token).GET('/api/build/event-endpoints/{endpointId}', { params: { path: { endpointId: endpoint.id } } });
  expect(disabled.data!.data.disabled_reason).toContain('410');
  const test = await t.client(token).POST('/api/build/event-endpoints/{endpointId}/test', { params: { path: { endpointId: endpoint.id } } });
  expect([test.response.status, test.error?.error]).toEqual([409, expect.stringContaining('is disabled')]);
  const seen = r.received.length;
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Unheard')) });

  r.respond = () => ({ status: 200 });
  const enabled = await t.client(token).PUT('/api/build/event-endpoints/{endpointId}', {
    params: { path: { endpointId: endpoint.id }, header: { 'If-Match': disabled.response.headers.get('etag')! } },
    body: { url: r.url, event_types: ['agent.created'], status: 'enabled' },
  });
  expect([enabled.response.status, enabled.data?.data.disabled_reason]).toEqual([200, null]);
  await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Heard')) });
  await r.waitFor((got) => got.some((e) => e.answered === 200));
  expect(r.received.slice(seen).map((e) => (e.event.data as { slug?: string }).slug)).toEqual([expect.stringMatching(/^heard-/)]);
  const stale = await t.client(token).DELETE('/api/build/event-endpoints/{endpointId}', {
    params: { path: { endpointId: endpoint.id }, header: { 'If-Match': disabled.response.headers.get('etag')! } },
  });
  expect(stale.response.status).toBe(409);
  const gone = await t.client(token).DELETE('/api/build/event-endpoints/{endpointId}', {
    params: { path: { endpointId: endpoint.id }, header: { 'If-Match': enabled.response.headers.get('etag')! } },
  });
  expect(gone.response.status).toBe(204);
  expect(await storedValue<number>(t.config, 'SELECT COUNT(*) FROM event_deliveries WHERE endpoint_id = ?', [endpoint.id])).toBe(0);
});

test("the deliveries page newest first by cursor; another workspace's endpoint is 404", async () => {
  const { r, token, endpoint } = await subscribed(['agent.created']);
  for (let i = 0; i < 5; i++) await t.client(token).PUT('/api/build/agents', { body: minimalAgent(unique('Paged')) });
  await r.waitFor((got) => got.length === 5);
  const first = await deliveries(token, endpoint.id, { limit: 2 });
  expect(first.response.headers.get('link')).toContain('rel="next"');
  const ids = [...first.data!.data.map((d) => d.id)];
  let cursor = first.data!.next_cursor;
  while (cursor) {
    const next = await deliveries(token, endpoint.id, { limit: 2, cursor });
    ids.push(...next.data!.data.map((d) => d.id));
    cursor = next.data!.next_cursor;
  }
  expect(ids).toHaveLength(5);
  expect([...ids].sort().reverse()).toEqual(ids);
  const foreign = await t.client(t.token({ workspace: unique('elsewhere') })).GET('/api/build/event-endpoints/{endpointId}/deliveries', {
    params: { path: { endpointId: endpoint.id } },
  });
  expect(foreign.response.status).toBe(404);
});

test("an eval's end and a WhatsApp message received are events too, with the ids a receiver needs", async () => {
  const { r, token } = await subscribed(['eval.finished', 'message.received']);
  const agent = await t.client(token).PUT('/api/build/agents', {
    body: { ...minimalAgent(unique('Graded')), eval_criteria: [{ type: 'contains', id: 'says-hi', value: 'Hello' }] as never },
  });
  expect(agent.response.status).toBe(201);
  const agentId = agent.data!.data.document.id;
  const dataset = await t.client(token).PUT('/api/build/eval-datasets', {
    body: { kind: 'service.eval-dataset/v1', slug: unique('hellos'), name: 'Hellos', cases: [{ id: 'hello', prompt: 'Hello there' }] },
  });
  expect(dataset.response.status).toBe(201);
  const started = await t.client(token).POST('/api/build/agents/{ref}/evals', {
    params: { path: { ref: agentId } },
    body: { dataset: dataset.data!.data.document.slug, repeats: 1 },
  });
  expect(started.response.status).toBe(202);
  const evalId = started.data!.data.id;
  const [finished] = ofSubject(await r.waitFor((got) => ofSubject(got, 'eval_id', evalId).length === 1), 'eval_id', evalId);
  expect(finished!.event).toMatchObject({ type: 'eval.finished', data: { eval_id: evalId, agent_id: agentId, status: 'finished', sequence: 1 } });
  expect(finished!.verifiedWith).toEqual([true]);

  // A WhatsApp number's message, signed as Meta signs it, received for an agent that answers on it.
  const line = await t.client(token).PUT('/api/build/connections', {
    body: {
      ref: unique('whatsapp:line'),
      app: 'whatsapp',
      credentials: { kind: 'whatsapp', phone_number_id: '5550001', access_token: 'EAAG-token', app_secret: 'meta-app-secret', verify_token: 'verify-me' },
    },
  });
  expect(line.response.status).toBe(201);
  const concierge = await t.client(token).PUT('/api/build/agents', {
    body: { ...minimalAgent(unique('Concierge')), whatsapp: { enabled: true, connection: line.data!.data.ref } },
  });
  const activated = await t.client(token).POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: concierge.data!.data.document.id }, header: { 'If-Match': concierge.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  expect(activated.response.status).toBe(200);
  const wamid = `wamid.${crypto.randomUUID()}`;
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba-1',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550001111', phone_number_id: '5550001' },
              contacts: [{ profile: { name: 'Sheena' }, wa_id: '16505551234' }],
              messages: [{ from: '16505551234', id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: 'Hi!' } }],
            },
          },
        ],
      },
    ],
  });
  const signature = `sha256=${crypto.createHmac('sha256', 'meta-app-secret').update(body).digest('hex')}`;
  const received = await fetch(line.data!.data.receive_url!.replace('http://build.test', t.baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
    body,
  });
  expect(received.status).toBe(200);
  const runId = ((await received.json()) as { data: { messages: { run_id: string }[] } }).data.messages[0]!.run_id;
  const [event] = ofSubject(await r.waitFor((got) => ofSubject(got, 'run_id', runId).length === 1), 'run_id', runId);
  const listed = await t.client(token).GET('/api/build/agents/{ref}/messages', { params: { path: { ref: concierge.data!.data.document.id } } });
  const stored = listed.data!.data.find((m) => m.direction === 'received')!;
  expect(stored.message_id).toBe(wamid);
  expect(event!.event).toMatchObject({
    type: 'message.received',
    data: { message_id: stored.id, agent_id: concierge.data!.data.document.id, channel: 'whatsapp', status: 'received', run_id: runId, sequence: 1 },
  });
  expect(r.received.map((e) => e.event.type).sort()).toEqual(['eval.finished', 'message.received']); // the filter let nothing else through
});
