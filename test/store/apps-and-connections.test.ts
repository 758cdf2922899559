// The workspaces' own apps and their connections with credentials (issue 44), each case on both
// adapters: creates within a limit and a slug rule, compare-and-set replaces and deletes, refreshes
// that keep the tools when they fail, credentials kept or replaced, and one winner of a token renewal.
import { adapters, useStore } from './adapters';
import { workspace } from './fixtures';

const settings = (slug: string, url = 'https://mcp.example/mcp') => ({
  kind: 'service.app/v1' as const,
  slug,
  name: `App ${slug}`,
  description: null,
  mcp: { url, auth: 'none' as const, timeout_ms: 10_000, output_bytes: 262_144, trust_annotations: false },
});
const tool = (slug: string) => ({ slug, name: slug, description: '', read_only: false, destructive: true, args_schema: { type: 'object' } });
const reserved = new Set(['core', 'kv']);

describe.each(adapters)('$name: apps and connections', (adapter) => {
  const { opened, store } = useStore(adapter);

  test('apps: created by slug (derived past taken and reserved ones), listed by slug, within the limit, in their workspace only', async () => {
    const ws = workspace();
    const first = await store.apps.create(ws, settings('tracker'), { limit: 3, deriveSlug: false, reserved });
    expect(first).toMatchObject({ ok: true, app: { slug: 'tracker', tools: [], server: null, refreshedAt: null, refreshError: null } });
    expect(await store.apps.create(ws, settings('tracker'), { limit: 3, deriveSlug: false, reserved })).toEqual({ ok: false, reason: 'slug_taken' });
    expect(await store.apps.create(ws, settings('kv'), { limit: 3, deriveSlug: false, reserved })).toEqual({ ok: false, reason: 'slug_taken' });
    const derived = await store.apps.create(ws, settings('kv'), { limit: 3, deriveSlug: true, reserved });
    expect(derived.ok && [derived.app.slug, derived.app.settings.slug]).toEqual(['kv-2', 'kv-2']);
    await store.apps.create(ws, settings('alpha'), { limit: 3, deriveSlug: false, reserved });
    expect(await store.apps.create(ws, settings('beta'), { limit: 3, deriveSlug: false, reserved })).toEqual({ ok: false, reason: 'limit_reached' });
    expect((await store.apps.list(ws)).map((a) => a.slug)).toEqual(['alpha', 'kv-2', 'tracker']);
    expect(await store.apps.list(workspace())).toEqual([]);
    expect(await store.apps.get(workspace(), 'tracker')).toBeNull();
  });

  test('apps: a replace and a delete land only on the stamp they name; a refresh keeps the tools when it fails', async () => {
    const ws = workspace();
    const created = await store.apps.create(ws, settings('tracker'), { limit: 10, deriveSlug: false, reserved });
    if (!created.ok) throw new Error('not created');
    const refreshed = await store.apps.recordRefresh(
      ws,
      'tracker',
      { tools: [tool('tracker.a')], server: { name: 's', version: '1', protocol_version: '2025-11-25' } },
      '2026-11-26T10:00:00.000Z',
    );
    expect(refreshed).toMatchObject({ tools: [tool('tracker.a')], refreshedAt: '2026-11-26T10:00:00.000Z', refreshError: null });
    expect(refreshed!.stampMicros).toBeGreaterThan(created.app.stampMicros);
    const failed = await store.apps.recordRefresh(ws, 'tracker', { error: 'down' }, '2026-11-26T11:00:00.000Z');
    expect(failed).toMatchObject({ tools: [tool('tracker.a')], server: { name: 's' }, refreshError: 'down', refreshedAt: '2026-11-26T11:00:00.000Z' });
    expect(await store.apps.replace(ws, 'tracker', created.app.stampMicros, settings('tracker', 'https://other.example/mcp'))).toEqual({
      ok: false,
      current: failed,
    });
    const replaced = await store.apps.replace(ws, 'tracker', failed!.stampMicros, settings('tracker', 'https://other.example/mcp'));
    expect(replaced.ok && [replaced.app.settings.mcp.url, replaced.app.tools]).toEqual(['https://other.example/mcp', [tool('tracker.a')]]);
    const current = replaced.ok ? replaced.app.stampMicros : 0;
    expect(await store.apps.remove(ws, 'tracker', failed!.stampMicros)).toBe('stale');
    expect(await store.apps.remove(ws, 'tracker', current)).toBe('removed');
    expect(await store.apps.remove(ws, 'tracker', current)).toBe('missing');
    expect(await store.apps.recordRefresh(ws, 'tracker', { error: 'gone' }, '2026-11-26T12:00:00.000Z')).toBeNull();
  });

  test('apps: of concurrent creates of one slug, one wins; of concurrent replaces on one stamp, one wins', async () => {
    const ws = workspace();
    const other = await opened.another();
    const creates = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).apps.create(ws, settings('same'), { limit: 100, deriveSlug: false, reserved })),
    );
    expect(creates.filter((c) => c.ok)).toHaveLength(1);
    const stamp = (await store.apps.get(ws, 'same'))!.stampMicros;
    const replaces = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).apps.replace(ws, 'same', stamp, settings('same', `https://r${i}.example/mcp`))),
    );
    expect(replaces.filter((r) => r.ok)).toHaveLength(1);
  });

  // A key names the workspace's apps and connections as they are: a return to an earlier state may
  // give its key again (stamps only grow, so no other state can).
  test('the snapshot key: the same while nothing changes, another after every write of an app or a connection', async () => {
    const ws = workspace();
    const keys = [await store.apps.snapshotKey(ws)];
    expect(keys[0]).toBe('0:0|0:0');
    const next = async (write: () => Promise<unknown>) => {
      await write();
      const key = await store.apps.snapshotKey(ws);
      expect(key).not.toBe(keys.at(-1));
      expect(await store.apps.snapshotKey(ws)).toBe(key);
      keys.push(key);
    };
    await next(() => store.apps.create(ws, settings('a'), { limit: 10, deriveSlug: false, reserved }));
    await next(() => store.apps.create(ws, settings('b'), { limit: 10, deriveSlug: false, reserved }));
    await next(() => store.apps.recordRefresh(ws, 'a', { tools: [tool('a.t')], server: { name: 's', version: '1', protocol_version: 'p' } }, 'now'));
    const b = (await store.apps.get(ws, 'b'))!;
    await next(() => store.apps.replace(ws, 'b', b.stampMicros, settings('b', 'https://b.example/mcp')));
    await next(async () => store.apps.remove(ws, 'a', (await store.apps.get(ws, 'a'))!.stampMicros));
    await next(() => store.connections.create(ws, write('c'), 10));
    await next(() => store.connections.recordCheck(ws, 'c', { status: 'expired', lastError: 'no', testedAt: 'now' }));
    await next(async () => store.connections.remove(ws, 'c', (await store.connections.get(ws, 'c'))!.stampMicros));
    expect(await store.apps.snapshotKey(workspace())).toBe('0:0|0:0');
  });

  const write = (ref: string, sealed: string | null = 'enc:v1:sealed') => ({
    ref,
    app: 'tracker',
    label: null,
    status: 'connected' as const,
    credentialsShown: { kind: 'bearer' as const },
    sealedCredentials: sealed,
    lastError: null,
    testedAt: '2026-11-26T10:00:00.000Z',
    receiverId: null,
  });

  test("connections: created within the limit, once per ref; read with their sealed credentials; listed in the description's shape", async () => {
    const ws = workspace();
    const created = await store.connections.create(ws, write('tracker:acme'), 2);
    expect(created).toMatchObject({
      ok: true,
      record: { ref: 'tracker:acme', credentialsShown: { kind: 'bearer' }, sealedCredentials: 'enc:v1:sealed', token: null },
    });
    expect(await store.connections.create(ws, write('tracker:acme'), 2)).toEqual({ ok: false, reason: 'ref_taken' });
    await store.connections.create(ws, write('tracker:b'), 2);
    expect(await store.connections.create(ws, write('tracker:c'), 2)).toEqual({ ok: false, reason: 'limit_reached' });
    expect(await store.connections.list(ws)).toEqual([
      { ref: 'tracker:acme', app: 'tracker', label: null, status: 'connected' },
      { ref: 'tracker:b', app: 'tracker', label: null, status: 'connected' },
    ]);
    expect(await store.connections.get(workspace(), 'tracker:acme')).toBeNull();
  });

  test('connections: a replace without credentials keeps them and the token; with credentials drops the token; checks and deletes by stamp', async () => {
    const ws = workspace();
    const created = await store.connections.create(ws, write('c1'), 10);
    if (!created.ok) throw new Error('not created');
    expect(await store.connections.claimRenewal(ws, 'c1', 1000, 5000, 61_000)).toBe(true);
    await store.connections.storeToken(ws, 'c1', 'enc:v1:token', 99_000);
    const held = (await store.connections.get(ws, 'c1'))!;
    expect(held.token).toEqual({ sealed: 'enc:v1:token', expiresAtMs: 99_000 });
    const kept = await store.connections.replace(ws, 'c1', held.stampMicros, { label: 'Relabelled', status: 'connected', lastError: null, testedAt: null });
    expect(kept.ok && [kept.record.label, kept.record.sealedCredentials, kept.record.token]).toEqual([
      'Relabelled',
      'enc:v1:sealed',
      { sealed: 'enc:v1:token', expiresAtMs: 99_000 },
    ]);
    const stamp = kept.ok ? kept.record.stampMicros : 0;
    expect(await store.connections.replace(ws, 'c1', held.stampMicros, { label: 'Lost', status: 'connected', lastError: null, testedAt: null })).toMatchObject({
      ok: false,
      current: { label: 'Relabelled' },
    });
    const swapped = await store.connections.replace(ws, 'c1', stamp, {
      label: 'Relabelled',
      status: 'expired',
      lastError: 'refused',
      testedAt: '2026-11-26T11:00:00.000Z',
      sealedCredentials: 'enc:v1:new',
      credentialsShown: { kind: 'headers', header_names: ['x-key'] },
    });
    expect(swapped.ok && [swapped.record.sealedCredentials, swapped.record.credentialsShown, swapped.record.token, swapped.record.status]).toEqual([
      'enc:v1:new',
      { kind: 'headers', header_names: ['x-key'] },
      null,
      'expired',
    ]);
    const checked = await store.connections.recordCheck(ws, 'c1', { status: 'connected', lastError: null, testedAt: '2026-11-26T12:00:00.000Z' });
    expect(checked).toMatchObject({ status: 'connected', lastError: null, testedAt: '2026-11-26T12:00:00.000Z' });
    expect(checked!.stampMicros).toBeGreaterThan(swapped.ok ? swapped.record.stampMicros : 0);
    expect(await store.connections.remove(ws, 'c1', stamp)).toBe('stale');
    expect(await store.connections.remove(ws, 'c1', checked!.stampMicros)).toBe('removed');
    expect(await store.connections.get(ws, 'c1')).toBeNull();
    expect(await store.connections.recordCheck(ws, 'c1', { status: 'connected', lastError: null, testedAt: '2026-11-26T12:00:00.000Z' })).toBeNull();
  });

  test('connections: of concurrent renewal claims (two stores) one wins; an expired claim may be taken again; storing the token releases it', async () => {
    const ws = workspace();
    await store.connections.create(ws, write('c2'), 10);
    const other = await opened.another();
    const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).connections.claimRenewal(ws, 'c2', 1_000, 31_000, 61_000)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await store.connections.claimRenewal(ws, 'c2', 30_999, 60_000, 90_999)).toBe(false);
    expect(await store.connections.claimRenewal(ws, 'c2', 31_000, 61_000, 91_000)).toBe(true);
    await other.connections.storeToken(ws, 'c2', 'enc:v1:t', 3_600_000);
    // The token just stored is good past the renewal point: a claim made on an older look loses.
    expect(await store.connections.claimRenewal(ws, 'c2', 31_001, 62_000, 91_001)).toBe(false);
    expect(await store.connections.claimRenewal(ws, 'c2', 3_540_000, 3_560_000, 3_600_000)).toBe(true);
  });
});
