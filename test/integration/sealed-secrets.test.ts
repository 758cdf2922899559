// Signing keys (which an HMAC needs, so they cannot be hashed) are stored sealed with SECRETS_KEY
// (or the data directory's key file): never in clear, still verifying deliveries; one stored in clear
// before sealing existed is sealed at the next start, and a rotated SECRETS_KEY (new first, old
// kept) reseals everything with the new key, after which the new key alone opens them.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPgDatabase, storeUnderTest } from '../helpers/database';
import { startService, type TestService } from '../helpers/service';
import { storedRows, storedValue, storedWrite, type StoredAt } from '../helpers/stored';
import { startEventReceiver } from '../helpers/event-receiver';
import { minimalAgent } from '../helpers/fixtures';

const newKey = () => crypto.randomBytes(32).toString('base64');

async function signedAgent(t: TestService) {
  const created = await t
    .client()
    .PUT('/api/build/agents', { body: { ...minimalAgent('Signed'), triggers: [{ kind: 'webhook', name: 'In', signing: 'standard-webhooks' }] } });
  expect(created.response.status).toBe(201);
  const doc = created.data!.data.document;
  const activated = await t.client().POST('/api/build/agents/{ref}/status', {
    params: { path: { ref: doc.id }, header: { 'If-Match': created.response.headers.get('etag')! } },
    body: { status: 'active' },
  });
  expect(activated.response.status).toBe(200);
  const hook = created.data!.data.webhook_urls![0]!;
  return { triggerId: hook.trigger_id, path: new URL(hook.url).pathname, signingSecret: hook.signing_secret! };
}

/** A delivery signed by hand with `secret`: its status. */
async function deliver(t: TestService, path: string, secret: string): Promise<number> {
  const body = '{"n":1}';
  const ts = Math.floor(Date.now() / 1000);
  const id = `msg_${crypto.randomUUID()}`;
  const mac = crypto
    .createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
    .update(`${id}.${ts}.${body}`)
    .digest('base64');
  const res = await fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${mac}` },
    body,
  });
  return res.status;
}

const stored = (at: StoredAt, triggerId: string) => storedValue<string>(at, 'SELECT signing_secret FROM agent_triggers WHERE id = ?', [triggerId]);
/** The same database again (its SQLite file, or its PostgreSQL database), with other keys. */
const again = (at: StoredAt, secretsKey: string) =>
  startService({ ...(at.databaseUrl ? { DATABASE_URL: at.databaseUrl } : { DATABASE_PATH: at.databasePath }), SECRETS_KEY: secretsKey });

test('a signing key is stored sealed, and still verifies deliveries', async () => {
  const t = await startService({ SECRETS_KEY: newKey() });
  try {
    const hook = await signedAgent(t);
    const value = (await stored(t.config, hook.triggerId))!;
    expect(value).toMatch(/^enc:v1:[0-9a-f]{8}:/);
    expect(value).not.toContain(hook.signingSecret.replace(/^whsec_/, ''));
    expect(await deliver(t, hook.path, hook.signingSecret)).toBe(202);
    expect(await deliver(t, hook.path, `whsec_${newKey()}`)).toBe(401);
  } finally {
    await t.close();
  }
});

test('a key stored in clear is sealed at the next start; a rotated SECRETS_KEY reseals with the new key, which then opens it alone', async () => {
  const [k1, k2] = [newKey(), newKey()];
  // A database of this test's own, which each service below opens in turn.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-sealed-'));
  const pgDatabase = storeUnderTest === 'postgres' ? await createPgDatabase() : null;
  const at: StoredAt = { databasePath: path.join(dir, 'build.db'), databaseUrl: pgDatabase?.url ?? null };
  try {
    const first = await again(at, k1);
    const hook = await signedAgent(first);
    await first.close();
    // As a service before sealing existed stored it.
    expect(await storedWrite(at, 'UPDATE agent_triggers SET signing_secret = ? WHERE id = ?', [hook.signingSecret, hook.triggerId])).toBe(1);

    const second = await again(at, k1);
    const sealedWithK1 = (await stored(at, hook.triggerId))!;
    expect(sealedWithK1).toMatch(/^enc:v1:/);
    expect(await deliver(second, hook.path, hook.signingSecret)).toBe(202);
    await second.close();

    const third = await again(at, `${k2},${k1}`);
    const sealedWithK2 = (await stored(at, hook.triggerId))!;
    expect(sealedWithK2).toMatch(/^enc:v1:/);
    expect(sealedWithK2.split(':')[2]).not.toBe(sealedWithK1.split(':')[2]); // another key id
    await third.close();

    const fourth = await again(at, k2);
    expect(await deliver(fourth, hook.path, hook.signingSecret)).toBe(202);
    await fourth.close();
  } finally {
    await pgDatabase?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a connection's credentials are stored sealed, and a rotated SECRETS_KEY reseals them: the new key alone still sends them", async () => {
  const [k1, k2] = [newKey(), newKey()];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-sealed-'));
  const pgDatabase = storeUnderTest === 'postgres' ? await createPgDatabase() : null;
  const at: StoredAt = { databasePath: path.join(dir, 'build.db'), databaseUrl: pgDatabase?.url ?? null };
  const secret = 'bearer-7c1d2e9f';
  const credentials = () => storedValue<string>(at, 'SELECT credentials_sealed FROM connections WHERE ref = ?', ['kv-secret']);
  try {
    const first = await again(at, k1);
    const created = await first
      .client()
      .PUT('/api/build/connections', { body: { ref: 'kv-secret', app: 'kv', label: null, credentials: { kind: 'bearer', token: secret } } });
    expect(created.response.status).toBe(201);
    const sealedWithK1 = (await credentials())!;
    expect(sealedWithK1).toMatch(/^enc:v1:/);
    expect(sealedWithK1).not.toContain(secret);
    await first.close();

    const rotated = await again(at, `${k2},${k1}`);
    const sealedWithK2 = (await credentials())!;
    expect(sealedWithK2.split(':')[2]).not.toBe(sealedWithK1.split(':')[2]);
    await rotated.close();

    const last = await again(at, k2);
    const { createCredentialSource } = await import('../../src/services/connection-credentials');
    const { createSecretBox } = await import('../../src/services/secret-box');
    const source = createCredentialSource({
      connections: last.service.store.connections,
      secrets: createSecretBox([Buffer.from(k2, 'base64')]),
      allowPrivate: false,
    });
    expect(await source.headersFor('ws-1', 'kv-secret')).toEqual({ authorization: `Bearer ${secret}` });
    await last.close();
  } finally {
    await pgDatabase?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a connection's rotated signing secret, still in its grace, is resealed too: the new key alone opens it", async () => {
  const [k1, k2] = [newKey(), newKey()];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-sealed-'));
  const pgDatabase = storeUnderTest === 'postgres' ? await createPgDatabase() : null;
  const at: StoredAt = { databasePath: path.join(dir, 'build.db'), databaseUrl: pgDatabase?.url ?? null };
  const previous = () => storedValue<string>(at, 'SELECT previous_sealed FROM connections WHERE ref = ?', ['gh-signed']);
  const body = (secret: string) => ({ ref: 'gh-signed', app: 'github' as const, credentials: { kind: 'signing_secret' as const, secret } });
  try {
    const first = await again(at, k1);
    try {
      const created = await first.client().PUT('/api/build/connections', { body: body('old-signing-secret') });
      expect(created.response.status).toBe(201);
      const rotated = await first.client().PUT('/api/build/connections/{connectionRef}', {
        params: { path: { connectionRef: 'gh-signed' }, header: { 'If-Match': created.response.headers.get('etag')! } },
        body: body('new-signing-secret'),
      });
      expect(rotated.data!.data.credentials).toMatchObject({ previous_valid_until: expect.any(String) });
    } finally {
      await first.close();
    }
    const sealedWithK1 = (await previous())!;
    expect(sealedWithK1).toMatch(/^enc:v1:/);

    await (await again(at, `${k2},${k1}`)).close();
    const sealedWithK2 = (await previous())!;
    expect(sealedWithK2.split(':')[2]).not.toBe(sealedWithK1.split(':')[2]);
    const { createSecretBox } = await import('../../src/services/secret-box');
    const { credentialsContext } = await import('../../src/services/connection-credentials');
    const k2Alone = createSecretBox([Buffer.from(k2, 'base64')]);
    expect(JSON.parse(k2Alone.open(sealedWithK2, credentialsContext('ws-1', 'gh-signed')))).toEqual({ kind: 'signing_secret', secret: 'old-signing-secret' });
  } finally {
    await pgDatabase?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("an event endpoint's secrets (its current one and a rotation's previous one) are stored sealed, and a rotated SECRETS_KEY reseals both: deliveries still verify with each", async () => {
  const [k1, k2] = [newKey(), newKey()];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-sealed-'));
  const pgDatabase = storeUnderTest === 'postgres' ? await createPgDatabase() : null;
  const at: StoredAt = { databasePath: path.join(dir, 'build.db'), databaseUrl: pgDatabase?.url ?? null };
  const receiver = await startEventReceiver();
  const sealed = async () =>
    (await storedRows<{ secret_sealed: string; previous_sealed: string }>(at, 'SELECT secret_sealed, previous_sealed FROM event_endpoints', []))[0]!;
  const keyIdOf = (value: string) => value.split(':')[2];
  const withKeys = (keys: string) =>
    startService({
      ...(at.databaseUrl ? { DATABASE_URL: at.databaseUrl } : { DATABASE_PATH: at.databasePath }),
      SECRETS_KEY: keys,
      HTTP_TOOL_ALLOW_PRIVATE: '1',
    });
  try {
    const first = await withKeys(k1);
    const created = await first.client().PUT('/api/build/event-endpoints', { body: { url: receiver.url, event_types: ['run.finished'], description: null } });
    expect(created.response.status).toBe(201);
    const endpointId = created.data!.data.id;
    const rotated = await first.client().POST('/api/build/event-endpoints/{endpointId}/rotate-secret', { params: { path: { endpointId } }, body: {} });
    expect(rotated.response.status).toBe(200);
    receiver.secrets.push(created.data!.data.secret, rotated.data!.data.secret);
    const before = await sealed();
    for (const value of [before.secret_sealed, before.previous_sealed]) {
      expect(value).toMatch(/^enc:v1:/);
      for (const secret of receiver.secrets) expect(value).not.toContain(secret.replace(/^whsec_/, ''));
    }
    await first.close();

    const turning = await withKeys(`${k2},${k1}`);
    const after = await sealed();
    expect(keyIdOf(after.secret_sealed)).not.toBe(keyIdOf(before.secret_sealed));
    expect(keyIdOf(after.previous_sealed)).toBe(keyIdOf(after.secret_sealed));
    await turning.close();

    const last = await withKeys(k2); // the old key is gone: only the resealed values open
    const test = await last.client().POST('/api/build/event-endpoints/{endpointId}/test', { params: { path: { endpointId } } });
    expect(test.response.status).toBe(202);
    const [delivered] = await receiver.waitFor((got) => got.length === 1);
    expect(delivered!.verifiedWith).toEqual([true, true]);
    await last.close();
  } finally {
    await receiver.close();
    await pgDatabase?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
