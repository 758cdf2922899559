import { startService, type TestService } from '../helpers/service';
import { storedBytes, storedRows } from '../helpers/stored';
import { minimalAgent, replaceBody } from '../helpers/fixtures';
import { hashSecret } from '../../src/services/webhooks';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t.close());

const URL_RE = /^http:\/\/build\.test\/hooks\/([0-9a-f-]{36})\/(whk_[A-Za-z0-9_-]{43})$/;

const storedTriggers = (agentId: string) =>
  storedRows<{ id: string; secret_hash: string | null; secret_prefix: string | null }>(
    t.config,
    'SELECT id, kind, secret_hash, secret_prefix FROM agent_triggers WHERE agent_id = ? ORDER BY id',
    [agentId],
  );

async function createWithHook() {
  const res = await t.client().PUT('/api/build/agents', { body: { ...minimalAgent('Hooked'), triggers: [{ kind: 'webhook', name: 'Inbound' }] } });
  expect(res.response.status).toBe(201);
  return { result: res.data!.data, etag: res.response.headers.get('etag')! };
}

test('a new webhook trigger gets a one-time URL; the store keeps only its hash and prefix', async () => {
  const { result } = await createWithHook();
  const trigger = result.document.triggers[0]!;
  expect(result.applied).toEqual(['document', 'triggers', 'webhooks']);
  expect(result.webhook_urls).toHaveLength(1);
  const [, triggerId, secret] = URL_RE.exec(result.webhook_urls![0]!.url)!;
  expect(result.webhook_urls![0]!.trigger_id).toBe(trigger.id);
  expect(triggerId).toBe(trigger.id);
  expect(trigger.kind === 'webhook' && trigger.secret_prefix).toBe(secret!.slice(0, 8));

  expect(await storedTriggers(result.document.id)).toEqual([
    { id: trigger.id, kind: 'webhook', secret_hash: hashSecret(secret!), secret_prefix: secret!.slice(0, 8) },
  ]);
  // The secret itself is in no row, no read and no list.
  const read = await t.client().GET('/api/build/agents/{ref}', { params: { path: { ref: result.document.id } } });
  expect(JSON.stringify(read.data)).not.toContain(secret);
  const stored = await storedBytes(t.config);
  expect(stored.includes(Buffer.from(hashSecret(secret!)))).toBe(true); // the scan does see the trigger's row
  expect(stored.includes(Buffer.from(secret!))).toBe(false);
});

test('a replace that keeps the webhook mints nothing; one that adds a webhook mints for it alone', async () => {
  const { result, etag } = await createWithHook();
  const kept = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: result.document.id }, header: { 'If-Match': etag } },
    body: { ...replaceBody(result.document), name: 'Renamed' },
  });
  expect(kept.response.status).toBe(200);
  expect(kept.data!.data).not.toHaveProperty('webhook_urls');
  expect(kept.data!.data.document.triggers).toEqual(result.document.triggers);

  const added = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: result.document.id }, header: { 'If-Match': kept.response.headers.get('etag')! } },
    body: { ...replaceBody(kept.data!.data.document), triggers: [...kept.data!.data.document.triggers, { kind: 'webhook', name: 'Second' }] },
  });
  expect(added.response.status).toBe(200);
  const second = added.data!.data.document.triggers[1]!;
  expect(added.data!.data.webhook_urls!.map((u) => u.trigger_id)).toEqual([second.id]);
});

test('omitting a webhook trigger without force is 409 naming it; nothing is written', async () => {
  const { result, etag } = await createWithHook();
  const res = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: result.document.id }, header: { 'If-Match': etag } },
    body: { ...replaceBody(result.document), triggers: [] },
  });
  expect(res.response.status).toBe(409);
  const body = res.error as { error: string; current: unknown; applied: string[] };
  expect(body.error).toContain(`'Inbound' (${result.document.triggers[0]!.id})`);
  expect(body.error).toContain('force=true');
  expect(body.current).toEqual(result.document);
  expect(body.applied).toEqual([]);
  expect(await storedTriggers(result.document.id)).toHaveLength(1);
});

test('with force=true the omitted webhook is dropped with its secret', async () => {
  const { result, etag } = await createWithHook();
  const res = await t.client().PUT('/api/build/agents/{ref}', {
    params: { path: { ref: result.document.id }, header: { 'If-Match': etag }, query: { force: 'true' } },
    body: { ...replaceBody(result.document), triggers: [] },
  });
  expect(res.response.status).toBe(200);
  expect(res.data!.data.changes).toEqual(["trigger 'Inbound' removed"]);
  expect(res.data!.data.applied).toEqual(['document', 'triggers', 'webhooks']);
  expect(await storedTriggers(result.document.id)).toEqual([]);
});

test('force accepts only the value true', async () => {
  const { result, etag } = await createWithHook();
  const res = await fetch(`${t.baseUrl}/api/build/agents/${result.document.id}?force=yes`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json', 'if-match': etag },
    body: JSON.stringify(replaceBody(result.document)),
  });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error: 'query.force: must be one of true' });
});
