// Concurrent writers against one real server process: optimistic concurrency holds, stamps and
// versions are exact, slugs stay unique, and credits are never overspent.
import { minimalAgent, replaceBody } from '../helpers/fixtures';
import { setStoredBalance, storedRows, storedValue } from '../helpers/stored';
import { parseStampMicros } from '../../src/domain/stamps';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(120_000);
let s: ServerProcess;
beforeAll(async () => {
  s = await startServer();
});
afterAll(() => s.dispose());

test('200 simultaneous replaces with one stamp: exactly one 200, 199 × 409 with the current document; the winner is stored', async () => {
  const created = await s.client().PUT('/api/build/agents', { body: minimalAgent('Contended') });
  const doc = created.data!.data.document;
  const etag = created.response.headers.get('etag')!;
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      s.client().PUT('/api/build/agents/{ref}', {
        params: { path: { ref: doc.id }, header: { 'If-Match': etag } },
        body: { ...replaceBody(doc), instructions: `writer ${i}` },
      }),
    ),
  );
  const winners = results.filter((r) => r.response.status === 200);
  const losers = results.filter((r) => r.response.status === 409);
  expect(winners).toHaveLength(1);
  expect(losers).toHaveLength(199);
  const winner = winners[0]!.data!.data.document;
  for (const loser of losers) {
    const body = loser.error as { current: unknown; applied: string[] };
    expect(body.applied).toEqual([]);
    expect(
      body.current === null ||
        (body.current as { updated_at: string }).updated_at === winner.updated_at ||
        (body.current as { updated_at: string }).updated_at === doc.updated_at,
    ).toBe(true);
  }
  const read = await s.client().GET('/api/build/agents/{ref}', { params: { path: { ref: doc.id } } });
  expect(read.data!.data).toEqual(winner);
  expect(read.response.headers.get('etag')).toBe(`"${winner.updated_at}"`);
});

test('1,000 rapid sequential writes: stamps strictly increase and version counts every write', async () => {
  const created = await s.client().PUT('/api/build/workflows', {
    body: { kind: 'service.workflow/v1', slug: 'rapid', name: 'Rapid', steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }] },
  });
  let doc = created.data!.data.document;
  let last = parseStampMicros(doc.updated_at)!;
  for (let i = 0; i < 1000; i++) {
    const res = await s.client().PUT('/api/build/workflows/{ref}', {
      params: { path: { ref: 'rapid' }, header: { 'If-Match': `"${doc.updated_at}"` } },
      body: { ...doc, name: `Rapid ${i}` },
    });
    expect(res.response.status).toBe(200);
    expect(res.data!.data.version).toBe(i + 2);
    doc = res.data!.data.document;
    const stamp = parseStampMicros(doc.updated_at)!;
    expect(stamp).toBeGreaterThan(last);
    last = stamp;
  }
  const list = await s.client().GET('/api/build/workflows');
  expect(list.data!.data.find((w) => w.slug === 'rapid')).toMatchObject({ version: 1001, updated_at: doc.updated_at });
});

test('concurrent creates with one slug: one 201, the rest 409, one row', async () => {
  const results = await Promise.all(
    Array.from({ length: 50 }, () => s.client().PUT('/api/build/agents', { body: { ...minimalAgent('Same'), slug: 'same-slug' } })),
  );
  expect(results.filter((r) => r.response.status === 201)).toHaveLength(1);
  expect(results.filter((r) => r.response.status === 409)).toHaveLength(49);
  const list = await s.client().GET('/api/build/agents');
  expect(list.data!.data.filter((a) => a.slug === 'same-slug')).toHaveLength(1);
});

test('concurrent test runs against a small balance: never more spent than the balance; every refusal recorded', async () => {
  const created = await s.client().PUT('/api/build/agents', {
    body: { ...minimalAgent('Spender'), max_steps: 5, tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' } },
  });
  await setStoredBalance(s, 'ws-1', 10);
  // Each run wants 3 model steps (two calls and an answer): 10 credits cannot pay for all of them.
  const prompt = '/call core.echo {}\n/call core.echo {}';
  const starts = await Promise.all(
    Array.from({ length: 30 }, () =>
      s.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: created.data!.data.document.id } }, body: { prompt } }),
    ),
  );
  const accepted = starts.filter((r) => r.response.status === 202).map((r) => r.data!.data.run_id);
  const refused = starts.filter((r) => r.response.status === 409).map((r) => (r.error as { run_id: string }).run_id);
  expect(accepted.length + refused.length).toBe(30);
  expect(accepted.length).toBeLessThanOrEqual(10);

  const deadline = Date.now() + 30_000;
  let rows: { status: string; credits_spent: number }[] = [];
  do {
    await new Promise((r) => setTimeout(r, 100));
    rows = await storedRows<{ status: string; credits_spent: number }>(s, 'SELECT status, credits_spent FROM runs WHERE workspace_id = ?', ['ws-1']);
  } while (rows.some((r) => r.status === 'queued' || r.status === 'running') && Date.now() < deadline);
  const spent = rows.reduce((sum, r) => sum + r.credits_spent, 0);
  const balance = (await storedValue<number>(s, 'SELECT credits FROM workspace_balances WHERE id = ?', ['ws-1']))!;
  expect(spent).toBeLessThanOrEqual(10);
  expect(spent + balance).toBe(10);
  expect(balance).toBeGreaterThanOrEqual(0);
  for (const runId of refused) {
    const run = await s.client().GET('/api/build/runs/{runId}', { params: { path: { runId } } });
    expect(run.data!.data.status).toBe('refused');
  }
});
