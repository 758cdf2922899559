// The webhook receiver end to end in-process: the URL a write hands out starts a run; every refusal
// (404, 405, 409, 410, 413, 401, 429, credits) and repeated delivery ids; what reaches the run.
// (test/reliability/webhooks.test.ts does the main path against a real server process.)
import crypto from 'node:crypto';
import { EVENT_KEPT_MS } from '../../src/services/app-events';
import { startService, type TestService } from '../helpers/service';
import { storedValue } from '../helpers/stored';
import { minimalAgent, replaceBody } from '../helpers/fixtures';
import { waitForAgentRun, withCredits } from '../helpers/runs';
import type { components } from '../../generated/api';

type Agent = components['schemas']['Agent'];
type Trigger = components['schemas']['TriggerInput'];

let t: TestService;
beforeAll(async () => {
  t = await startService({ WEBHOOK_RATE_LIMIT: '5' });
});
afterAll(() => t.close());

let n = 0;
/** An agent with one webhook trigger (and its status set); the URL as the write returned it. */
async function hookedAgent(opts: { status?: 'draft' | 'active'; trigger?: Partial<Extract<Trigger, { kind: 'webhook' }>> } = {}) {
  const created = await t.client().PUT('/api/build/agents', {
    body: { ...minimalAgent(`Hooked ${++n}`), triggers: [{ kind: 'webhook', name: 'Inbound', ...opts.trigger }] },
  });
  expect(created.response.status).toBe(201);
  let doc = created.data!.data.document;
  let etag = created.response.headers.get('etag')!;
  if ((opts.status ?? 'active') === 'active') {
    const active = await t
      .client()
      .POST('/api/build/agents/{ref}/status', { params: { path: { ref: doc.id }, header: { 'If-Match': etag } }, body: { status: 'active' } });
    doc = active.data!.data.document;
    etag = active.response.headers.get('etag')!;
  }
  const hook = created.data!.data.webhook_urls![0]!;
  return { doc, etag, url: hook.url.replace('http://build.test', t.baseUrl), signingSecret: hook.signing_secret, triggerId: hook.trigger_id };
}

const post = (url: string, body: string | undefined, headers: Record<string, string> = {}, method = 'POST') => fetch(url, { method, headers, body });
const json = (value: unknown) => JSON.stringify(value);

async function runsOfTrigger(triggerId: string): Promise<number> {
  return (await storedValue<number>(t.config, 'SELECT COUNT(*) FROM runs WHERE trigger_id = ?', [triggerId]))!;
}

/** A Standard Webhooks signature made by hand (not with the library the service verifies with). */
function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

describe('a delivery starts a run', () => {
  test('POST JSON: 202 with the queued run; the run is readable by every member of the workspace and gets the delivery', async () => {
    const { url, triggerId, doc } = await hookedAgent({ trigger: { prompt: 'File this ticket.' } });
    const res = await post(`${url}?source=crm&tag=a&tag=b`, json({ ticket: { id: 4711 } }), {
      'content-type': 'application/json',
      'user-agent': 'crm/1.0',
      'x-secret-header': 'not forwarded',
    });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { data: { run_id: string; status: string } };
    expect(body.data.status).toBe('queued');
    expect(Object.keys(body.data)).toEqual(['run_id', 'status']);

    const colleague = t.token({ user: 'someone-else' });
    const run = await waitForAgentRun(t, body.data.run_id, colleague);
    expect(run).toMatchObject({ status: 'succeeded', source: 'webhook', trigger_id: triggerId, agent: { slug: doc.slug }, credits: 1 });
    const prompt = run.transcript[0]!.content!;
    expect(prompt.startsWith('File this ticket.\n\nWebhook delivery:\n')).toBe(true);
    expect(JSON.parse(prompt.split('\n').pop()!)).toEqual({
      body: { ticket: { id: 4711 } },
      headers: { 'content-type': 'application/json', 'user-agent': 'crm/1.0' },
      query: { source: 'crm', tag: ['a', 'b'] },
    });
    // Another workspace does not see it.
    const other = await t.client(t.token({ workspace: 'ws-other' })).GET('/api/build/runs/{runId}', { params: { path: { runId: body.data.run_id } } });
    expect(other.response.status).toBe(404);
  });

  test('PUT as well; a form is passed as an object, anything else as text', async () => {
    const { url } = await hookedAgent();
    const form = await post(url, 'a=1&b=two', { 'content-type': 'application/x-www-form-urlencoded' }, 'PUT');
    expect(form.status).toBe(202);
    const formRun = await waitForAgentRun(t, ((await form.json()) as { data: { run_id: string } }).data.run_id);
    expect(JSON.parse(formRun.transcript[0]!.content!.split('\n').pop()!).body).toEqual({ a: '1', b: 'two' });
    const text = await post(url, 'plain words', { 'content-type': 'text/plain' });
    const textRun = await waitForAgentRun(t, ((await text.json()) as { data: { run_id: string } }).data.run_id);
    expect(JSON.parse(textRun.transcript[0]!.content!.split('\n').pop()!).body).toBe('plain words');
  });
});

describe('refusals', () => {
  test('an unknown trigger and a wrong secret are the same 404; other methods are 405', async () => {
    const { url } = await hookedAgent();
    const wrongSecret = await post(url.replace(/[^/]+$/, 'whk_wrong'), '{}');
    const unknownTrigger = await post(url.replace(/hooks\/[^/]+/, `hooks/${crypto.randomUUID()}`), '{}');
    const malformed = await post(`${t.baseUrl}/hooks/not-a-uuid/x`, '{}');
    for (const res of [wrongSecret, unknownTrigger, malformed]) {
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'no webhook at this URL' });
    }
    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')!.split(', ').sort()).toEqual(['OPTIONS', 'POST', 'PUT']);
  });

  test('a rotated-away secret and a dropped trigger are 410; the new URL works', async () => {
    const { url, doc, triggerId, etag } = await hookedAgent();
    const rotated = await t.client().POST('/api/build/agents/{ref}/rotate-webhook', { params: { path: { ref: doc.id } }, body: { trigger_id: triggerId } });
    expect(rotated.response.status).toBe(200);
    const old = await post(url, '{}');
    expect(old.status).toBe(410);
    expect(await old.json()).toEqual({ error: 'this webhook URL was replaced by a rotation; use the new URL' });
    const fresh = rotated.data!.data.url.replace('http://build.test', t.baseUrl);
    expect((await post(fresh, '{}')).status).toBe(202);

    const current = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
    const dropped = await t.client().PUT('/api/build/agents/{ref}', {
      params: { path: { ref: doc.id }, header: { 'If-Match': current.response.headers.get('etag')! }, query: { force: 'true' } },
      body: { ...replaceBody(current.data!.data), triggers: [] },
    });
    expect(dropped.response.status).toBe(200);
    expect(etag).not.toBe(current.response.headers.get('etag'));
    const gone = await post(fresh, '{}');
    expect(gone.status).toBe(410);
    expect(await gone.json()).toEqual({ error: 'this webhook trigger was removed from its agent' });
  });

  test('a draft agent, an archived agent and a disabled trigger are 409 with run_id null; nothing is queued', async () => {
    const draft = await hookedAgent({ status: 'draft' });
    const res = await post(draft.url, '{}');
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: `agent '${draft.doc.slug}' is draft; only an active agent's triggers fire (POST /api/build/agents/${draft.doc.slug}/status)`,
      run_id: null,
    });

    const disabled = await hookedAgent({ trigger: { enabled: false } });
    const off = await post(disabled.url, '{}');
    expect(off.status).toBe(409);
    expect(((await off.json()) as { error: string }).error).toBe(
      `trigger 'Inbound' of agent '${disabled.doc.slug}' is disabled; enable it to receive deliveries`,
    );

    const archived = await t.client().POST('/api/build/agents/{ref}/status', {
      params: { path: { ref: disabled.doc.id }, header: { 'If-Match': `"${disabled.doc.updated_at}"` } },
      body: { status: 'archived' },
    });
    expect(archived.response.status).toBe(200);
    expect((await post(disabled.url, '{}')).status).toBe(409);
    expect((await runsOfTrigger(draft.triggerId)) + (await runsOfTrigger(disabled.triggerId))).toBe(0);
  });

  test('a body over 64 KiB is 413 before anything else, even at a wrong URL', async () => {
    const { url } = await hookedAgent();
    for (const target of [url, url.replace(/[^/]+$/, 'whk_wrong')]) {
      const res = await post(target, 'x'.repeat(64 * 1024 + 1), { 'content-type': 'text/plain' });
      expect(res.status).toBe(413);
    }
  });

  test('the rate limit: past WEBHOOK_RATE_LIMIT deliveries a minute, 429 with Retry-After', async () => {
    const { url, triggerId } = await hookedAgent();
    // Seven deliveries inside one calendar minute (the limit's window): wait out a boundary that is close.
    const msLeft = 60_000 - (Date.now() % 60_000);
    if (msLeft < 3000) await new Promise((resolve) => setTimeout(resolve, msLeft + 50));
    const replies: Response[] = [];
    for (let i = 0; i < 7; i++) replies.push(await post(url, '{}'));
    expect(replies.map((r) => r.status)).toEqual([202, 202, 202, 202, 202, 429, 429]);
    const limited = replies[5]!;
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await limited.json()).toEqual({ error: `this trigger received 5 deliveries this minute, its limit; retry after ${retryAfter} s` });
    expect(await runsOfTrigger(triggerId)).toBe(5);
  });

  test('short credits: 409 with the run_id of the recorded refusal, readable in the workspace', async () => {
    const { url } = await hookedAgent();
    await withCredits(t, 'ws-1', 0, async () => {
      const res = await post(url, '{}');
      expect(res.status).toBe(409);
      const body = (await res.json()) as { error: string; run_id: string };
      expect(body.error).toBe('insufficient credits: the run needs at least 1, the workspace has 0');
      const run = await t.client(t.token({ user: 'colleague' })).GET('/api/build/runs/{runId}', { params: { path: { runId: body.run_id } } });
      expect(run.data!.data).toMatchObject({ status: 'refused', source: 'webhook' });
    });
  });
});

describe('repeated deliveries', () => {
  test('the same webhook-id or Idempotency-Key answers the first reply and starts nothing, also when sent at once', async () => {
    const { url, triggerId } = await hookedAgent();
    const first = await post(url, '{"n":1}', { 'webhook-id': 'msg_1' });
    const again = await post(url, '{"n":2}', { 'webhook-id': 'msg_1' });
    const firstBody = (await first.json()) as { data: { run_id: string } };
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(((await again.json()) as { data: { run_id: string } }).data.run_id).toBe(firstBody.data.run_id);

    const together = await Promise.all(Array.from({ length: 8 }, () => post(url, '{}', { 'idempotency-key': 'key-42' })));
    const ids = await Promise.all(together.map(async (r) => ((await r.json()) as { data: { run_id: string } }).data.run_id));
    expect(new Set(together.map((r) => r.status))).toEqual(new Set([202]));
    expect(new Set(ids).size).toBe(1);
    expect(await runsOfTrigger(triggerId)).toBe(2);
  });
});

test('delivery ids are pruned off the request path once EVENT_KEPT_MS (8 days) old; the id then starts a new run', async () => {
  const { url, triggerId } = await hookedAgent();
  const first = (await (await post(url, '{}', { 'webhook-id': 'old-1' })).json()) as { data: { run_id: string } };
  await t.service.maintenance.runOnce(Date.now() + EVENT_KEPT_MS - 60_000); // not yet 8 days old
  expect(((await (await post(url, '{}', { 'webhook-id': 'old-1' })).json()) as { data: { run_id: string } }).data.run_id).toBe(first.data.run_id);
  await t.service.maintenance.runOnce(Date.now() + EVENT_KEPT_MS + 60_000);
  const later = (await (await post(url, '{}', { 'webhook-id': 'old-1' })).json()) as { data: { run_id: string } };
  expect(later.data.run_id).not.toBe(first.data.run_id);
  expect(await runsOfTrigger(triggerId)).toBe(2);
});

describe('Standard Webhooks signatures', () => {
  test('a signing trigger shows its whsec_ secret once and needs a valid, fresh signature', async () => {
    const { url, signingSecret, doc } = await hookedAgent({ trigger: { signing: 'standard-webhooks' } });
    expect(signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((doc.triggers[0] as Extract<Agent['triggers'][number], { kind: 'webhook' }>).signing).toBe('standard-webhooks');
    const body = '{"event":"paid"}';
    const now = Math.floor(Date.now() / 1000);
    const headers = (id: string, ts: number, signature: string) => ({
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': signature,
    });

    const unsigned = await post(url, body, { 'content-type': 'application/json' });
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toEqual({
      error: 'this trigger requires a Standard Webhooks signature: send webhook-id, webhook-timestamp and webhook-signature',
    });
    const forged = await post(url, body, headers('msg_a', now, sign(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, 'msg_a', now, body)));
    expect(forged.status).toBe(401);
    expect(await forged.json()).toEqual({ error: "webhook-signature: no signature matches the trigger's signing secret" });
    const tampered = await post(url, '{"event":"refunded"}', headers('msg_b', now, sign(signingSecret!, 'msg_b', now, body)));
    expect(tampered.status).toBe(401);
    const stale = await post(url, body, headers('msg_c', now - 301, sign(signingSecret!, 'msg_c', now - 301, body)));
    expect(stale.status).toBe(401);
    expect(((await stale.json()) as { error: string }).error).toMatch(/^webhook-timestamp: /);

    const good = await post(url, body, headers('msg_d', now, sign(signingSecret!, 'msg_d', now, body)));
    expect(good.status).toBe(202);
    // Rotation on the sender's side: several signatures, one of them valid.
    const several = await post(url, body, headers('msg_e', now, `v1,bm90IGl0 ${sign(signingSecret!, 'msg_e', now, body)} v2,whatever`));
    expect(several.status).toBe(202);
  });

  test('rotation mints a new signing secret with the URL; the old one stops verifying', async () => {
    const { doc, triggerId, signingSecret } = await hookedAgent({ trigger: { signing: 'standard-webhooks' } });
    const rotated = await t.client().POST('/api/build/agents/{ref}/rotate-webhook', { params: { path: { ref: doc.id } }, body: { trigger_id: triggerId } });
    const fresh = rotated.data!.data;
    expect(fresh.signing_secret).toMatch(/^whsec_/);
    expect(fresh.signing_secret).not.toBe(signingSecret);
    const url = fresh.url.replace('http://build.test', t.baseUrl);
    const now = Math.floor(Date.now() / 1000);
    const send = (secret: string, id: string) =>
      post(url, '{}', { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': sign(secret, id, now, '{}') });
    expect((await send(signingSecret!, 'old')).status).toBe(401);
    expect((await send(fresh.signing_secret!, 'new')).status).toBe(202);
  });

  test('switching an existing trigger to signing mints its URL and signing secret anew; the old URL is 410', async () => {
    const { doc, etag, url } = await hookedAgent();
    const body = replaceBody(doc);
    body.triggers = [{ ...(body.triggers[0] as Extract<Trigger, { kind: 'webhook' }>), signing: 'standard-webhooks' }];
    const replaced = await t.client().PUT('/api/build/agents/{ref}', { params: { path: { ref: doc.id }, header: { 'If-Match': etag } }, body });
    expect(replaced.response.status).toBe(200);
    const minted = replaced.data!.data.webhook_urls!;
    expect(minted).toHaveLength(1);
    expect(minted[0]!.signing_secret).toMatch(/^whsec_/);
    expect((await post(url, '{}')).status).toBe(410);
  });
});

test("the agent read shows each trigger's live status; a replace that sends it back ignores it", async () => {
  const { url, doc, triggerId } = await hookedAgent();
  const before = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
  expect(before.data!.data.triggers[0]).toMatchObject({ id: triggerId, last_fired_at: null, next_fire_at: null, last_error: null });
  const etag = before.response.headers.get('etag')!;
  const delivered = (await (await post(url, '{}')).json()) as { data: { run_id: string } };
  const after = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
  expect(after.response.headers.get('etag')).toBe(etag); // live status, not the document: the stamp stays
  const run = await waitForAgentRun(t, delivered.data.run_id);
  expect(after.data!.data.triggers[0]!.last_fired_at).toBe(run.started_at);

  const replaced = await t
    .client()
    .PUT('/api/build/agents/{ref}', { params: { path: { ref: doc.id }, header: { 'If-Match': etag } }, body: replaceBody(after.data!.data) });
  expect(replaced.response.status).toBe(200);
  expect(replaced.data!.data.document.triggers[0]).not.toHaveProperty('last_fired_at');
});
