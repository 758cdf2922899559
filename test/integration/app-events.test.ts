// App-event triggers end to end in-process, on the store under test: connections of the apps whose
// events arrive signed (github, stripe, slack, standard-webhooks) and their receiving URLs;
// deliveries signed by each sender's own library or documented algorithm start one run per
// matching trigger, however often they repeat (in parallel too); bad, stale and foreign signatures
// start nothing; a rotated secret verifies through its grace; the kv app's events, their key
// prefix filter, and the chain limit.
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { startService, type TestService } from '../helpers/service';
import { storedValue } from '../helpers/stored';
import { minimalAgent } from '../helpers/fixtures';
import { waitForAgentRun, waitForAgentRunStatus, waitForWorkflowRun, withCredits } from '../helpers/runs';
import { githubSignature } from '../helpers/github-signature';
import type { components } from '../../generated/api';

type Schemas = components['schemas'];
type Accepted = Schemas['AppEventAcceptedResponse'];

let t: TestService;
beforeAll(async () => {
  t = await startService({ WEBHOOK_RATE_LIMIT: '50' });
});
afterAll(() => t.close());

let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}`;

async function connection(app: string, secret: string, token?: string) {
  const ref = unique(`${app}:c`);
  const res = await t.client(token).PUT('/api/build/connections', { body: { ref, app, credentials: { kind: 'signing_secret', secret } } });
  expect(res.response.status).toBe(201);
  const data = res.data!.data;
  return { ref, url: data.receive_url!.replace('http://build.test', t.baseUrl), etag: res.response.headers.get('etag')!, view: data };
}

type EventTrigger = Extract<Schemas['TriggerInput'], { kind: 'app_event' }>;

/** An active agent listening with `triggers`; its document. */
async function listening(triggers: Omit<EventTrigger, 'kind'>[], extra: Partial<Schemas['AgentCreate']> = {}, token?: string) {
  const created = await t.client(token).PUT('/api/build/agents', {
    body: { ...minimalAgent(unique('Listener')), max_steps: 4, ...extra, triggers: triggers.map((tr) => ({ kind: 'app_event' as const, ...tr })) },
  });
  expect(created.error).toBeUndefined();
  const doc = created.data!.data.document;
  const active = await t.client(token).POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: doc.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  expect(active.response.status).toBe(200);
  return active.data!.data.document;
}

const runsOf = async (triggerId: string) => Number(await storedValue<number>(t.config, 'SELECT COUNT(*) FROM runs WHERE trigger_id = ?', [triggerId]));

async function send(url: string, body: string, headers: Record<string, string>) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, body: (await res.json()) as Accepted & { error?: string; challenge?: string } };
}

const github = (secret: string, event: string, payload: object, delivery = crypto.randomUUID()) => {
  const body = JSON.stringify(payload);
  return { body, headers: { 'x-github-event': event, 'x-github-delivery': delivery, 'x-hub-signature-256': githubSignature(secret, body) } };
};

describe('github', () => {
  test('a signed pull_request.opened starts one run of the trigger on its family; the run gets app, event, connection, delivery id and payload', async () => {
    const gh = await connection('github', 'gh-secret-1');
    expect(gh.view).toMatchObject({ app: 'github', status: 'connected', credentials: { kind: 'signing_secret', previous_valid_until: null } });
    expect(gh.view.receive_url).toMatch(/^http:\/\/build\.test\/events\/rcv_[A-Za-z0-9_-]{27}$/);
    const agent = await listening([{ name: 'PRs', app: 'github', event: 'pull_request', connection: gh.ref, prompt: 'Review it.' }]);
    const trigger = agent.triggers[0]!;
    const delivery = github('gh-secret-1', 'pull_request', { action: 'opened', number: 7, title: 'Fix' });
    const res = await send(gh.url, delivery.body, delivery.headers);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      app: 'github',
      event: 'pull_request.opened',
      delivery_id: delivery.headers['x-github-delivery'],
      repeated: false,
      runs: [{ trigger_id: trigger.id, agent: agent.slug, status: 'queued' }],
    });
    const run = await waitForAgentRun(t, res.body.data.runs[0]!.run_id, t.token({ user: 'colleague' }));
    expect(run).toMatchObject({ status: 'succeeded', source: 'app_event', trigger_id: trigger.id });
    const prompt = run.transcript[0]!.content!;
    expect(prompt.startsWith('Review it.\n\nApp event:\n')).toBe(true);
    expect(JSON.parse(prompt.split('\n').pop()!)).toEqual({
      app: 'github',
      event: 'pull_request.opened',
      connection: gh.ref,
      delivery_id: delivery.headers['x-github-delivery'],
      chain: 1,
      payload_bytes: Buffer.byteLength(delivery.body),
      payload: { action: 'opened', number: 7, title: 'Fix' },
    });
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: agent.slug } } });
    expect(read.data!.data.triggers[0]!.last_fired_at).not.toBeNull();
  });

  test('a byte changed, no signature, another secret, another connection or another workspace: 401 and no run', async () => {
    const gh = await connection('github', 'gh-secret-2');
    const other = await connection('github', 'gh-secret-other');
    const foreign = await connection('github', 'gh-secret-foreign', t.token({ workspace: 'ws-foreign' }));
    const agent = await listening([{ name: 'Issues', app: 'github', event: 'issues.opened', connection: gh.ref }]);
    const good = github('gh-secret-2', 'issues', { action: 'opened', number: 1 });
    const tampered = good.body.replace('"number":1', '"number":2');
    expect((await send(gh.url, tampered, good.headers)).status).toBe(401);
    const { 'x-hub-signature-256': _sig, ...unsigned } = good.headers;
    expect(await send(gh.url, good.body, unsigned)).toMatchObject({ status: 401, body: { error: 'X-Hub-Signature-256 is missing' } });
    expect((await send(other.url, good.body, good.headers)).status).toBe(401);
    expect((await send(foreign.url, good.body, good.headers)).status).toBe(401);
    const fromForeign = github('gh-secret-foreign', 'issues', { action: 'opened', number: 1 });
    expect((await send(gh.url, fromForeign.body, fromForeign.headers)).status).toBe(401);
    expect(await runsOf(agent.triggers[0]!.id)).toBe(0);
    expect((await send(gh.url, good.body, good.headers)).status).toBe(200);
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
  });

  test('the same delivery sent 12 times at once starts one run; every reply names it', async () => {
    const gh = await connection('github', 'gh-secret-3');
    const agent = await listening([{ name: 'Pushes', app: 'github', event: 'push', connection: gh.ref }]);
    const delivery = github('gh-secret-3', 'push', { ref: 'refs/heads/main' });
    const replies = await Promise.all(Array.from({ length: 12 }, () => send(gh.url, delivery.body, delivery.headers)));
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(200));
    const ids = new Set(replies.map((r) => r.body.data.runs[0]!.run_id));
    expect(ids.size).toBe(1);
    expect(replies.filter((r) => !r.body.data.repeated)).toHaveLength(1);
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
  });

  test('ping, an event no trigger names, a disabled trigger, a draft agent: 200 and nothing starts', async () => {
    const gh = await connection('github', 'gh-secret-4');
    const agent = await listening([
      { name: 'Off', app: 'github', event: 'push', connection: gh.ref, enabled: false },
      { name: 'Releases', app: 'github', event: 'release.published', connection: gh.ref },
    ]);
    const ping = github('gh-secret-4', 'ping', { zen: 'Keep it logically awesome.', hook_id: 1 });
    expect(await send(gh.url, ping.body, ping.headers)).toMatchObject({ status: 200, body: { data: { event: null, runs: [] } } });
    const push = github('gh-secret-4', 'push', { ref: 'refs/heads/main' });
    expect(await send(gh.url, push.body, push.headers)).toMatchObject({ status: 200, body: { data: { event: 'push', runs: [] } } });
    const issue = github('gh-secret-4', 'issues', { action: 'opened' });
    expect(await send(gh.url, issue.body, issue.headers)).toMatchObject({ status: 200, body: { data: { runs: [] } } });
    expect(await runsOf(agent.triggers[0]!.id)).toBe(0);
    expect(await runsOf(agent.triggers[1]!.id)).toBe(0);
  });

  test('a rotated secret keeps verifying through its grace; with a grace of 0 it stops at once', async () => {
    const gh = await connection('github', 'gh-old');
    const agent = await listening([{ name: 'Any', app: 'github', event: 'push', connection: gh.ref }]);
    const rotated = await t.client().PUT('/api/build/connections/{connectionRef}', {
      params: { path: { connectionRef: gh.ref }, header: { 'If-Match': gh.etag } },
      body: { ref: gh.ref, app: 'github', credentials: { kind: 'signing_secret', secret: 'gh-new' } },
    });
    expect(rotated.response.status).toBe(200);
    const until = Date.parse(rotated.data!.data.credentials.previous_valid_until!);
    expect(until - Date.now()).toBeGreaterThan(86_000_000);
    expect(rotated.data!.data.receive_url).toBe(gh.view.receive_url);
    for (const secret of ['gh-old', 'gh-new']) {
      const d = github(secret, 'push', { ref: secret });
      expect((await send(gh.url, d.body, d.headers)).status).toBe(200);
    }
    expect(await runsOf(agent.triggers[0]!.id)).toBe(2);
    const ended = await t.client().PUT('/api/build/connections/{connectionRef}', {
      params: { path: { connectionRef: gh.ref }, header: { 'If-Match': rotated.response.headers.get('etag')! } },
      body: { ref: gh.ref, app: 'github', credentials: { kind: 'signing_secret', secret: 'gh-newer', previous_valid_for_seconds: 0 } },
    });
    expect(ended.data!.data.credentials.previous_valid_until).toBeNull();
    const old = github('gh-new', 'push', { ref: 'late' });
    expect((await send(gh.url, old.body, old.headers)).status).toBe(401);
    // The secret is never shown, nor stored in clear.
    expect(JSON.stringify(ended.data)).not.toContain('gh-newer');
    const stored = await storedValue<string>(t.config, 'SELECT credentials_sealed FROM connections WHERE ref = ?', [gh.ref]);
    expect(stored).not.toContain('gh-newer');
  });

  test('a payload over 16 KiB reaches the run as its hash and size; a body over 64 KiB is 413; PUT is 405; GET (the subscription check, of whatsapp connections only) 404; an unknown receiver 404', async () => {
    const gh = await connection('github', 'gh-secret-5');
    const agent = await listening([{ name: 'Big', app: 'github', event: 'push', connection: gh.ref }]);
    const big = github('gh-secret-5', 'push', { blob: 'x'.repeat(20_000) });
    const res = await send(gh.url, big.body, big.headers);
    expect(res.status).toBe(200);
    const run = await waitForAgentRun(t, res.body.data.runs[0]!.run_id);
    const input = JSON.parse(run.transcript[0]!.content!.split('\n').pop()!);
    expect(input).toMatchObject({ payload: null, payload_bytes: Buffer.byteLength(big.body) });
    expect(input.payload_sha256).toBe(crypto.createHash('sha256').update(big.body).digest('hex'));
    const huge = github('gh-secret-5', 'push', { blob: 'x'.repeat(70_000) });
    expect((await send(gh.url, huge.body, huge.headers)).status).toBe(413);
    const put = await fetch(gh.url, { method: 'PUT', body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect(await (await fetch(gh.url)).json()).toEqual({ error: 'no whatsapp connection receives at this URL' });
    expect((await send(`${t.baseUrl}/events/rcv_unknown`, big.body, big.headers)).status).toBe(404);
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
  });
});

describe('stripe', () => {
  const stripe = new Stripe('sk_test_x');
  test("the test header helper's signature starts a run per event id; a stale timestamp is 401; both v1 of a rotation verify", async () => {
    const st = await connection('stripe', 'whsec_stripe_1');
    const agent = await listening([{ name: 'Paid', app: 'stripe', event: 'invoice.paid', connection: st.ref }]);
    const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'invoice.paid', data: { object: { id: 'in_1' } } });
    const header = (secret: string, timestamp = Math.floor(Date.now() / 1000)) =>
      stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
    const first = await send(st.url, body, { 'stripe-signature': header('whsec_stripe_1') });
    expect(first).toMatchObject({ status: 200, body: { data: { event: 'invoice.paid', delivery_id: 'evt_1', repeated: false } } });
    const again = await send(st.url, body, { 'stripe-signature': header('whsec_stripe_1') });
    expect(again.body.data).toMatchObject({ repeated: true, runs: [{ run_id: first.body.data.runs[0]!.run_id }] });
    const stale = await send(st.url, body, { 'stripe-signature': header('whsec_stripe_1', Math.floor(Date.now() / 1000) - 600) });
    expect(stale.status).toBe(401);
    expect(stale.body.error).toMatch(/timestamp/);
    const both = `${header('whsec_other')},v1=${header('whsec_stripe_1').split('v1=')[1]}`;
    const rotatedBody = body.replace('evt_1', 'evt_2');
    const signed = stripe.webhooks.generateTestHeaderString({ payload: rotatedBody, secret: 'whsec_stripe_1' });
    expect((await send(st.url, rotatedBody, { 'stripe-signature': `${signed},v1=${'0'.repeat(64)}` })).status).toBe(200);
    expect((await send(st.url, body, { 'stripe-signature': both })).status).toBe(200);
    expect(await runsOf(agent.triggers[0]!.id)).toBe(2);
  });
});

describe('slack', () => {
  const slackHeaders = (secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)) => ({
    'x-slack-request-timestamp': String(timestamp),
    'x-slack-signature': `v0=${crypto.createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`,
  });
  test('url_verification is answered; an event_callback starts a run once, a retry (X-Slack-Retry-Num) repeats it; stale is 401', async () => {
    const sl = await connection('slack', 'slack-signing-secret');
    const agent = await listening([{ name: 'Mentions', app: 'slack', event: 'app_mention', connection: sl.ref }]);
    const challenge = JSON.stringify({ type: 'url_verification', token: 'x', challenge: 'c-123' });
    expect(await send(sl.url, challenge, slackHeaders('slack-signing-secret', challenge))).toEqual({ status: 200, body: { challenge: 'c-123' } });
    const body = JSON.stringify({ type: 'event_callback', team_id: 'T1', event_id: 'Ev1', event: { type: 'app_mention', text: 'hi' } });
    const first = await send(sl.url, body, slackHeaders('slack-signing-secret', body));
    expect(first.body.data).toMatchObject({ event: 'app_mention', delivery_id: 'Ev1', repeated: false });
    const retry = await send(sl.url, body, { ...slackHeaders('slack-signing-secret', body), 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' });
    expect(retry.body.data.repeated).toBe(true);
    expect((await send(sl.url, body, slackHeaders('slack-signing-secret', body, Math.floor(Date.now() / 1000) - 301))).status).toBe(401);
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
  });
});

describe('standard-webhooks', () => {
  test("the library's signature starts runs by the body's type, a family and `*`; a wrong signature is 401", async () => {
    const secret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
    const sw = await connection('standard-webhooks', secret);
    const agent = await listening([
      { name: 'Exact', app: 'standard-webhooks', event: 'invoice.paid', connection: sw.ref },
      { name: 'Family', app: 'standard-webhooks', event: 'invoice', connection: sw.ref },
      { name: 'All', app: 'standard-webhooks', event: '*', connection: sw.ref },
      { name: 'Other', app: 'standard-webhooks', event: 'user.created', connection: sw.ref },
    ]);
    const body = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } });
    const id = `msg_${crypto.randomUUID()}`;
    const at = new Date();
    const signature = new Webhook(secret).sign(id, at, body);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
    const res = await send(sw.url, body, headers);
    expect(res.status).toBe(200);
    expect(res.body.data.runs.map((r) => r.trigger_id).sort()).toEqual(
      agent.triggers
        .slice(0, 3)
        .map((tr) => tr.id)
        .sort(),
    );
    expect((await send(sw.url, body, { ...headers, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` })).status).toBe(401);
  });
});

describe('kv events', () => {
  test('a key written by a run starts the listening trigger (within its prefix) with the key and value; a refused write starts nothing', async () => {
    const kv = await t.client().PUT('/api/build/connections', { body: { ref: unique('kv:c'), app: 'kv', credentials: { kind: 'none' } } });
    expect(kv.data!.data.receive_url).toBeNull();
    const ref = kv.data!.data.ref;
    const agent = await listening([
      { name: 'Orders', app: 'kv', event: 'key.set', connection: ref, key_prefix: 'orders/' },
      { name: 'Deleted', app: 'kv', event: 'key.deleted', connection: ref },
    ]);
    const writer = await listening([], { tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' } });
    const started = await t.client().POST('/api/build/agents/{ref}/test', {
      params: { path: { ref: writer.slug } },
      body: { prompt: '/call kv.set {"key":"orders/7","value":{"total":3}}\n/call kv.set {"key":"notes/1","value":1}\n/call kv.delete {"key":"notes/1"}' },
    });
    // kv.delete is destructive: held for approval, then approved.
    const held = await waitForAgentRun(t, started.data!.data.run_id);
    expect(held.status).toBe('awaiting_approval');
    const decided = await t.client().POST('/api/build/runs/{runId}/approvals/{callId}', {
      params: { path: { runId: held.id, callId: 'call_3' } },
      body: { decision: 'approve' },
    });
    expect(decided.response.status).toBe(200);
    await waitForAgentRunStatus(t, held.id, 'succeeded');
    await t.service.events.dispatch();
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
    expect(await runsOf(agent.triggers[1]!.id)).toBe(1);
    const runId = await storedValue<string>(t.config, 'SELECT id FROM runs WHERE trigger_id = ?', [agent.triggers[0]!.id]);
    const run = await waitForAgentRun(t, runId!);
    expect(JSON.parse(run.transcript[0]!.content!.split('\n').pop()!)).toMatchObject({
      app: 'kv',
      event: 'key.set',
      connection: ref,
      chain: 1,
      payload: { key: 'orders/7', value: { total: 3 } },
    });
    // A second dispatch of the same events starts nothing more.
    await t.service.events.dispatch();
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
  });

  test("a workflow's kv.set step starts the trigger too", async () => {
    const kv = await t.client().PUT('/api/build/connections', { body: { ref: unique('kv:c'), app: 'kv', credentials: { kind: 'none' } } });
    const agent = await listening([{ name: 'Tickets', app: 'kv', event: 'key.set', connection: kv.data!.data.ref, key_prefix: 'tickets/' }]);
    const slug = unique('writer');
    const created = await t.client().PUT('/api/build/workflows', {
      body: { kind: 'service.workflow/v1', slug, name: slug, steps: [{ id: 'file', kind: 'tool', tool: 'kv.set', args: { key: 'tickets/9', value: 'open' } }] },
    });
    expect(created.response.status).toBe(201);
    const started = await t.client().POST('/api/build/workflows/{ref}/test', { params: { path: { ref: slug } }, body: {} });
    await waitForWorkflowRun(t, started.data!.data.run_id);
    await t.service.events.dispatch();
    expect(await runsOf(agent.triggers[0]!.id)).toBe(1);
  });

  test('a trigger whose run writes the key it listens to stops at the chain limit (3 runs)', async () => {
    const kv = await t.client().PUT('/api/build/connections', { body: { ref: unique('kv:c'), app: 'kv', credentials: { kind: 'none' } } });
    const prompt = '/call kv.set {"key":"loop/x","value":1}';
    const looping = await listening([{ name: 'Loop', app: 'kv', event: 'key.set', connection: kv.data!.data.ref, key_prefix: 'loop/', prompt }], {
      tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'destructive' },
    });
    const started = await t.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: looping.slug } }, body: { prompt } });
    await waitForAgentRun(t, started.data!.data.run_id);
    for (let i = 0; i < 6; i++) {
      await t.service.events.dispatch();
      const ids = await storedValue<string>(t.config, "SELECT MAX(id) FROM runs WHERE trigger_id = ? AND status IN ('queued', 'running')", [
        looping.triggers[0]!.id,
      ]);
      if (ids) await waitForAgentRun(t, ids);
    }
    expect(await runsOf(looping.triggers[0]!.id)).toBe(3);
    expect(await storedValue<number>(t.config, 'SELECT COUNT(*) FROM app_events_pending')).toBe(0);
    // The trigger's status says why it stopped.
    const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: looping.slug } } });
    expect(read.data!.data.triggers[0]!.last_error).toBe('a key.set event 4 events down a chain started no run: kv events start runs at most 3 deep');
  });

  test('credits short: the run is recorded refused, the delivery still answered 200', async () => {
    const gh = await connection('github', 'gh-secret-credits');
    await listening([{ name: 'Broke', app: 'github', event: 'push', connection: gh.ref }]);
    const d = github('gh-secret-credits', 'push', { ref: 'x' });
    const res = await withCredits(t, 'ws-1', 0, () => send(gh.url, d.body, d.headers));
    expect(res).toMatchObject({ status: 200, body: { data: { runs: [{ status: 'refused' }] } } });
  });
});

describe('connections and triggers are checked', () => {
  test("a github connection needs a signing secret, and only such apps take one; key_prefix is the kv app's", async () => {
    const bearer = await t
      .client()
      .PUT('/api/build/connections', { body: { ref: unique('github:b'), app: 'github', credentials: { kind: 'bearer', token: 't' } } });
    expect(bearer.response.status).toBe(400);
    expect(bearer.error!.error).toContain('body.credentials.kind');
    const kv = await t
      .client()
      .PUT('/api/build/connections', { body: { ref: unique('kv:s'), app: 'kv', credentials: { kind: 'signing_secret', secret: 's' } } });
    expect(kv.response.status).toBe(400);
    const gh = await connection('github', 'gh-secret-6');
    const bad = await t.client().PUT('/api/build/agents', {
      body: {
        ...minimalAgent(unique('Bad')),
        triggers: [{ kind: 'app_event', name: 'X', app: 'github', event: 'push', connection: gh.ref, key_prefix: 'a/' }],
      },
    });
    expect(bad.response.status).toBe(400);
    expect(bad.error!.error).toContain('body.triggers[0].key_prefix');
    const catalog = await t.client().GET('/api/build/catalog/apps/{app}', { params: { path: { app: 'github' } } });
    expect(catalog.data!.data.events!.map((e) => e.name)).toContain('pull_request.opened');
  });
});
