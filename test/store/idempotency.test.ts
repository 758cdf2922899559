// Idempotency keys: the first request with a key claims it (of concurrent ones, one), its reply is
// stored once answered, a repeat reads the claim or the reply, an expired key or a claim that died
// in flight is claimed anew, old keys are pruned — each case on both adapters.
import { adapters, useStore, type IdempotencyKey } from './adapters';
import { workspace } from './fixtures';

const LONG_AGO = '2000-01-01T00:00:00.000Z';
const LATER = '2030-01-01T00:00:00.000Z';
const reply = { status: 201, headers: { etag: '"x"', location: '/things/1' }, body: '{"ok":true}' };

describe.each(adapters)('$name: idempotency keys', (adapter) => {
  const { store } = useStore(adapter);

  const key = (ws: string, k = 'k1', more: Partial<IdempotencyKey> = {}): IdempotencyKey => ({
    workspaceId: ws,
    userId: 'user-1',
    operation: 'create',
    key: k,
    ...more,
  });

  test('begin claims a new key; a repeat is told the holder’s fingerprint, then its reply once complete', async () => {
    const ws = workspace();
    const now = new Date().toISOString();
    expect(await store.idempotency.begin(key(ws), 'fp-1', now, LATER, LONG_AGO)).toEqual({ outcome: 'claimed' });
    expect(await store.idempotency.begin(key(ws), 'fp-2', now, LATER, LONG_AGO)).toEqual({ outcome: 'held', fingerprint: 'fp-1', reply: null });
    await store.idempotency.complete(key(ws), 'fp-other', reply); // not the claim's request: nothing stored
    expect(await store.idempotency.begin(key(ws), 'fp-2', now, LATER, LONG_AGO)).toEqual({ outcome: 'held', fingerprint: 'fp-1', reply: null });
    await store.idempotency.complete(key(ws), 'fp-1', reply);
    expect(await store.idempotency.begin(key(ws), 'fp-1', now, LATER, LONG_AGO)).toEqual({ outcome: 'held', fingerprint: 'fp-1', reply });
    await store.idempotency.complete(key(ws), 'fp-1', { ...reply, status: 500 }); // answered once
    expect(await store.idempotency.begin(key(ws), 'fp-1', now, LATER, LONG_AGO)).toMatchObject({ reply: { status: 201 } });
  });

  test('a key is the workspace’s, user’s and operation’s: each of those is another key', async () => {
    const ws = workspace();
    const now = new Date().toISOString();
    await store.idempotency.begin(key(ws), 'fp', now, LATER, LONG_AGO);
    for (const other of [key(workspace()), key(ws, 'k1', { userId: 'user-2' }), key(ws, 'k1', { operation: 'replace' }), key(ws, 'k2')]) {
      expect(await store.idempotency.begin(other, 'fp', now, LATER, LONG_AGO)).toEqual({ outcome: 'claimed' });
    }
  });

  test('release forgets an unanswered claim (of its own request only); an answered one stays', async () => {
    const ws = workspace();
    const now = new Date().toISOString();
    await store.idempotency.begin(key(ws), 'fp', now, LATER, LONG_AGO);
    await store.idempotency.release(key(ws), 'fp-other');
    expect((await store.idempotency.begin(key(ws), 'fp-2', now, LATER, LONG_AGO)).outcome).toBe('held');
    await store.idempotency.release(key(ws), 'fp');
    expect(await store.idempotency.begin(key(ws), 'fp-2', now, LATER, LONG_AGO)).toEqual({ outcome: 'claimed' });
    await store.idempotency.complete(key(ws), 'fp-2', reply);
    await store.idempotency.release(key(ws), 'fp-2');
    expect(await store.idempotency.begin(key(ws), 'fp-3', now, LATER, LONG_AGO)).toEqual({ outcome: 'held', fingerprint: 'fp-2', reply });
  });

  test('an expired key (created before expiredBefore) and a claim that died in flight (locked_until passed, no reply) are claimed anew', async () => {
    const ws = workspace();
    const now = new Date().toISOString();
    await store.idempotency.begin(key(ws, 'answered'), 'fp', now, LATER, LONG_AGO);
    await store.idempotency.complete(key(ws, 'answered'), 'fp', reply);
    expect(await store.idempotency.begin(key(ws, 'answered'), 'fp-new', now, LATER, '2100-01-01T00:00:00.000Z')).toEqual({ outcome: 'claimed' });
    expect(await store.idempotency.begin(key(ws, 'answered'), 'fp-x', now, LATER, LONG_AGO)).toEqual({ outcome: 'held', fingerprint: 'fp-new', reply: null });
    await store.idempotency.begin(key(ws, 'dying'), 'fp', now, LATER, LONG_AGO);
    // Still locked: held.
    expect((await store.idempotency.begin(key(ws, 'dying'), 'fp-2', '2029-01-01T00:00:00.000Z', '2029-01-01T00:01:00.000Z', LONG_AGO)).outcome).toBe('held');
    expect(await store.idempotency.begin(key(ws, 'dying'), 'fp-3', '2031-01-01T00:00:00.000Z', '2031-01-01T00:01:00.000Z', LONG_AGO)).toEqual({
      outcome: 'claimed',
    });
    // An answered key is never taken over for its lock, only for its age.
    await store.idempotency.complete(key(ws, 'dying'), 'fp-3', reply);
    expect(await store.idempotency.begin(key(ws, 'dying'), 'fp-4', '2040-01-01T00:00:00.000Z', '2040-01-01T00:01:00.000Z', LONG_AGO)).toEqual({
      outcome: 'held',
      fingerprint: 'fp-3',
      reply,
    });
  });

  test('of concurrent first requests with one key, exactly one claims it', async () => {
    const ws = workspace();
    const now = new Date().toISOString();
    const begins = await Promise.all(Array.from({ length: 10 }, (_, i) => store.idempotency.begin(key(ws, 'race'), `fp-${i}`, now, LATER, LONG_AGO)));
    const claimed = begins.flatMap((b, i) => (b.outcome === 'claimed' ? [i] : []));
    expect(claimed).toHaveLength(1);
    for (const b of begins) if (b.outcome === 'held') expect(b).toEqual({ outcome: 'held', fingerprint: `fp-${claimed[0]}`, reply: null });
  });
});

describe.each(adapters)('$name: idempotency keys’ retention', (adapter) => {
  const { store } = useStore(adapter);

  test('prune deletes at most `limit` keys created before the time; a pruned key is claimed anew', async () => {
    const ws = workspace();
    const old = '2001-01-01T00:00:00.000Z';
    const k = (name: string) => ({ workspaceId: ws, userId: 'u', operation: 'op', key: name });
    for (let i = 0; i < 5; i++) await store.idempotency.begin(k(`old-${i}`), 'fp', old, old, LONG_AGO);
    await store.idempotency.begin(k('new'), 'fp', '2002-01-01T00:00:00.000Z', LATER, LONG_AGO);
    expect(await store.idempotency.prune('2002-01-01T00:00:00.000Z', 3)).toBe(3);
    expect(await store.idempotency.prune('2002-01-01T00:00:00.000Z', 3)).toBe(2);
    expect(await store.idempotency.prune('2002-01-01T00:00:00.000Z', 3)).toBe(0);
    expect(await store.idempotency.begin(k('old-0'), 'fp-2', '2002-06-01T00:00:00.000Z', LATER, LONG_AGO)).toEqual({ outcome: 'claimed' });
    expect((await store.idempotency.begin(k('new'), 'fp-2', '2002-06-01T00:00:00.000Z', LATER, LONG_AGO)).outcome).toBe('held');
  });
});
