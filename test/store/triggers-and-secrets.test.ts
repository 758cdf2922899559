// An agent's webhook triggers as the receiver reads them: their rows follow the document, the
// store keeps the hash of each URL's secret (never the secret), a rotated or dropped secret is
// retired (so a delivery to it is told why), and signing secrets are listed and replaced for
// re-sealing — each case on both adapters.
import { adapters, useStore } from './adapters';
import { agent, createAgent, hook, ok, poll, secret, unique, workspace } from './fixtures';
import { WRITER } from './fixtures';

describe.each(adapters)('$name: triggers and secrets', (adapter) => {
  const { store } = useStore(adapter);

  test('a created agent’s webhook triggers are targets with their secret’s hash; a poll trigger is no target', async () => {
    const ws = workspace();
    const [t1, t2, p1] = [unique('t1'), unique('t2'), unique('p1')];
    const doc = agent('hooked', { triggers: [hook(t1), hook(t2, 'standard-webhooks'), poll(p1)] });
    await createAgent(store, ws, doc, [secret(t1, 'hash-1'), secret(t2, 'hash-2', 'whsec_2')]);
    expect(await store.webhooks.target(t1)).toEqual({ triggerId: t1, agentId: doc.id, workspaceId: ws, secretHash: 'hash-1', signingSecret: null });
    expect(await store.webhooks.target(t2)).toEqual({ triggerId: t2, agentId: doc.id, workspaceId: ws, secretHash: 'hash-2', signingSecret: 'whsec_2' });
    expect(await store.webhooks.target(p1)).toBeNull();
    expect(await store.webhooks.target(unique('none'))).toBeNull();
    expect(await store.webhooks.target(`${t1}\u0000`)).toBeNull();
  });

  test('a webhook trigger without a minted secret has no hash', async () => {
    const ws = workspace();
    const t = unique('bare');
    const doc = agent('bare', { triggers: [hook(t)] });
    await createAgent(store, ws, doc);
    expect(await store.webhooks.target(t)).toEqual({ triggerId: t, agentId: doc.id, workspaceId: ws, secretHash: null, signingSecret: null });
  });

  test('rows follow the document: a dropped trigger goes and its secret is retired `dropped`; a new secret for a kept one retires the old `rotated`', async () => {
    const ws = workspace();
    const [t1, t2, t3, p1] = [unique('t1'), unique('t2'), unique('t3'), unique('p1')];
    const doc = agent('follow', { triggers: [hook(t1), hook(t2)] });
    let record = await createAgent(store, ws, doc, [secret(t1, 'h1'), secret(t2, 'h2')]);
    const replace = async (triggers: ReturnType<typeof hook>[], secrets: ReturnType<typeof secret>[]) => {
      record = await ok(store.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, triggers }, secrets, WRITER));
    };
    // t1 dropped, t2's secret rotated, t3 new and signing.
    await replace([hook(t2), hook(t3, 'standard-webhooks')], [secret(t2, 'h2b'), secret(t3, 'h3', 'whsec_3')]);
    expect(await store.webhooks.target(t1)).toBeNull();
    expect(await store.webhooks.target(t2)).toMatchObject({ secretHash: 'h2b', signingSecret: null });
    expect(await store.webhooks.target(t3)).toMatchObject({ secretHash: 'h3', signingSecret: 'whsec_3' });
    expect(await store.webhooks.retired(t1, 'h1')).toBe('dropped');
    expect(await store.webhooks.retired(t2, 'h2')).toBe('rotated');
    expect(await store.webhooks.retired(t2, 'h2b')).toBeNull();
    // t3 stops signing (its key goes), a poll appears; no secret minted: nothing retired.
    await replace([hook(t2), hook(t3), poll(p1)], []);
    expect(await store.webhooks.target(t3)).toMatchObject({ secretHash: 'h3', signingSecret: null });
    expect(await store.webhooks.retired(t3, 'h3')).toBeNull();
    // t3 rotated, t2 dropped.
    await replace([hook(t3), poll(p1)], [secret(t3, 'h3b')]);
    expect(await store.webhooks.target(t2)).toBeNull();
    expect(await store.webhooks.retired(t2, 'h2b')).toBe('dropped');
    expect(await store.webhooks.retired(t3, 'h3')).toBe('rotated');
    expect(await store.webhooks.target(t3)).toMatchObject({ secretHash: 'h3b' });
    // A hash is retired for its own trigger only; one never used is no retired secret.
    expect(await store.webhooks.retired(t2, 'h1')).toBeNull();
    expect(await store.webhooks.retired(t1, 'never')).toBeNull();
    expect(await store.webhooks.retired(`${t1}\u0000`, 'h1')).toBeNull();
    expect(await store.webhooks.retired(t1, 'h1\u0000')).toBeNull();
  });

  test('a secret minted again with the same hash is not retired; a trigger’s rows stay while the document keeps it', async () => {
    const ws = workspace();
    const t = unique('same');
    const doc = agent('same-hash', { triggers: [hook(t)] });
    const record = await createAgent(store, ws, doc, [secret(t, 'hs')]);
    await ok(store.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: 'renamed' }, [secret(t, 'hs')], WRITER));
    expect(await store.webhooks.retired(t, 'hs')).toBeNull();
    expect(await store.webhooks.target(t)).toMatchObject({ secretHash: 'hs', agentId: doc.id });
  });

  test('a losing replace (stale stamp) changes no trigger row', async () => {
    const ws = workspace();
    const t = unique('kept');
    const doc = agent('stale-triggers', { triggers: [hook(t)] });
    const record = await createAgent(store, ws, doc, [secret(t, 'hk')]);
    await ok(store.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, name: 'first' }, [], WRITER));
    const stale = await store.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, triggers: [] }, [], WRITER);
    expect(stale.ok).toBe(false);
    expect(await store.webhooks.target(t)).toMatchObject({ secretHash: 'hk' });
    expect(await store.webhooks.retired(t, 'hk')).toBeNull();
  });

  test('signing secrets are listed by trigger id after a cursor, and replaced only while still the expected one', async () => {
    const ws = workspace();
    const prefix = unique('sig');
    const ids = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
    const doc = agent('signing', { triggers: [...ids.map((id) => hook(id, 'standard-webhooks')), hook(`${prefix}-d`)] });
    await createAgent(store, ws, doc, [...ids.map((id, i) => secret(id, `h${i}`, `sealed-${i}`)), secret(`${prefix}-d`, 'hd')]);
    const mine = async (after: string, limit: number) => (await store.webhooks.signingSecrets(after, limit)).filter((s) => s.triggerId.startsWith(prefix));
    expect(await mine(prefix, 100)).toEqual(ids.map((triggerId, i) => ({ triggerId, signingSecret: `sealed-${i}` })));
    expect(await store.webhooks.signingSecrets(`${prefix}-a`, 1)).toEqual([{ triggerId: `${prefix}-b`, signingSecret: 'sealed-1' }]);
    expect(await mine(`${prefix}-c`, 100)).toEqual([]);
    const all = await store.webhooks.signingSecrets('', 10_000);
    expect(all.map((s) => s.triggerId)).toEqual([...all.map((s) => s.triggerId)].sort());
    expect(await store.webhooks.replaceSigningSecret(`${prefix}-b`, 'sealed-1', 'resealed-1')).toBe(true);
    expect(await store.webhooks.replaceSigningSecret(`${prefix}-b`, 'sealed-1', 'other')).toBe(false);
    expect(await store.webhooks.replaceSigningSecret(`${prefix}-d`, 'anything', 'other')).toBe(false);
    expect(await store.webhooks.target(`${prefix}-b`)).toMatchObject({ signingSecret: 'resealed-1' });
    const raced = await Promise.all([
      store.webhooks.replaceSigningSecret(`${prefix}-c`, 'sealed-2', 'by-one'),
      store.webhooks.replaceSigningSecret(`${prefix}-c`, 'sealed-2', 'by-two'),
    ]);
    expect([...raced].sort()).toEqual([false, true]);
    expect((await store.webhooks.target(`${prefix}-c`))!.signingSecret).toBe(raced[0] ? 'by-one' : 'by-two');
  });
});

describe.each(adapters)('$name: retired secrets’ retention', (adapter) => {
  const { store } = useStore(adapter);

  test('pruneRetired deletes at most `limit` secrets retired before the time; a pruned secret is no longer known', async () => {
    const ws = workspace();
    const ids = [unique('r1'), unique('r2'), unique('r3')];
    const doc = agent('retiring', { triggers: ids.map((id) => hook(id)) });
    const record = await createAgent(
      store,
      ws,
      doc,
      ids.map((id, i) => secret(id, `old-${i}`)),
    );
    await ok(store.agents.replace(ws, doc.id, record.stampMicros, { ...record.document, triggers: [] }, [], WRITER));
    expect(await Promise.all(ids.map((id, i) => store.webhooks.retired(id, `old-${i}`)))).toEqual(['dropped', 'dropped', 'dropped']);
    expect(await store.webhooks.pruneRetired('2000-01-01T00:00:00.000Z', 10)).toBe(0);
    const later = new Date(Date.now() + 60_000).toISOString();
    expect(await store.webhooks.pruneRetired(later, 2)).toBe(2);
    expect(await store.webhooks.pruneRetired(later, 2)).toBe(1);
    expect(await store.webhooks.pruneRetired(later, 2)).toBe(0);
    expect(await Promise.all(ids.map((id, i) => store.webhooks.retired(id, `old-${i}`)))).toEqual([null, null, null]);
  });
});
