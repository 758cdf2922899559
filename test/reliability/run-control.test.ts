// Guarantees of listing, cancelling and following runs, tried against a real server process:
//  - 1,000 runs paged through while 100 more are inserted: no run twice, none of the first 1,000 missed;
//  - cancels racing the runs' own ends: exactly one outcome per run, and the credits add up exactly;
//  - an event-stream client that disconnects and resumes 100 times during a long run sees exactly
//    the stored events, in order.
import { startServer, type ServerProcess } from './server';
import { minimalAgent } from '../helpers/fixtures';
import { storedValue } from '../helpers/stored';
import { readEventStream } from '../helpers/events';

jest.setTimeout(240_000);
let s: ServerProcess;
beforeAll(async () => {
  s = await startServer({ RUN_WORKERS: '8', RUN_WORKERS_PER_WORKSPACE: '8', DEFAULT_CREDITS: '1000000' });
});
afterAll(() => s.dispose());

const FINAL = ['succeeded', 'failed', 'refused', 'cancelled'];

async function createAgent(name: string, tools: string[] = ['core', 'kv']): Promise<string> {
  const res = await s.client().PUT('/api/build/agents', {
    body: { ...minimalAgent(name), max_steps: 40, tools: { apps: tools, connections: 'all', disabled_tools: [], approval: 'destructive' } },
  });
  expect(res.response.status).toBe(201);
  return res.data!.data.document.slug;
}

async function start(slug: string, prompt: string): Promise<string> {
  const res = await s.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt } });
  expect(res.response.status).toBe(202);
  return res.data!.data.run_id;
}

async function until(runId: string, done: (status: string) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = (await s.client().GET('/api/build/runs/{runId}', { params: { path: { runId } } })).data!.data;
    if (done(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('1,000 runs paged through while 100 more are inserted: none twice, none of the 1,000 missed', async () => {
  const slug = await createAgent('Listed many');
  const initial: string[] = [];
  for (let batch = 0; batch < 20; batch++) initial.push(...(await Promise.all(Array.from({ length: 50 }, () => start(slug, 'hi')))));
  expect(new Set(initial).size).toBe(1000);

  const inserted: string[] = [];
  const inserting = (async () => {
    for (let i = 0; i < 100; i++) inserted.push(await start(slug, 'more'));
  })();
  const seen: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await s.client().GET('/api/build/runs', { params: { query: { agent: slug, limit: 7, ...(cursor && { cursor }) } } });
    expect(res.response.status).toBe(200);
    seen.push(...res.data!.data.map((r) => r.id));
    if (!res.data!.next_cursor) break;
    cursor = res.data!.next_cursor;
    await new Promise((r) => setImmediate(r)); // let the inserts interleave with the pages
  }
  await inserting;
  expect(new Set(seen).size).toBe(seen.length); // no run twice
  const seenSet = new Set(seen);
  expect(initial.filter((id) => !seenSet.has(id))).toEqual([]); // none of the first 1,000 missed
  // Every run seen is one of ours, newest first; the ones inserted meanwhile are newer than the first page's cut.
  expect(seen.every((id) => initial.includes(id) || inserted.includes(id))).toBe(true);
  expect([...seen].sort().reverse()).toEqual(seen);
});

test("cancels racing the runs' ends: exactly one outcome each, credits exact", async () => {
  const slug = await createAgent('Raced');
  // The balance as stored (the API does not show it): read from the server's database.
  const balance = async () => (await storedValue<number>(s, "SELECT credits FROM workspace_balances WHERE id = 'ws-1'"))!;
  const before = await balance();
  const runs = await Promise.all(
    Array.from({ length: 60 }, (_, i) => start(slug, Array.from({ length: 1 + (i % 4) }, () => '/call core.sleep {"ms":30}').join('\n'))),
  );
  const answers = await Promise.all(
    runs.map(async (runId, i) => {
      await new Promise((r) => setTimeout(r, (i * 7) % 150)); // before, during and after each run's end
      const res = await s.client().POST('/api/build/runs/{runId}/cancel', { params: { path: { runId } } });
      return { runId, status: res.response.status, body: res.data?.data };
    }),
  );
  let spent = 0;
  for (const answer of answers) {
    const run = await until(answer.runId, (status) => FINAL.includes(status));
    spent += run.credits ?? 0;
    if (answer.status === 200) {
      expect(run.status).toBe('cancelled');
      expect(run.cancelled_by).toBe('user-1');
    } else {
      expect(answer.status).toBe(409); // it ended first: its end stands and the cancel left no trace
      expect(run.status).toBe('succeeded');
      expect([run.cancelled_by, run.cancelled_at]).toEqual([null, null]);
    }
    expect(run.credits).toBe(run.steps ?? 0);
  }
  expect(answers.some((a) => a.status === 200)).toBe(true);
  expect(await balance()).toBe(before - spent);
});

test('a stream client that disconnects and resumes 100 times during a long run sees every stored event once, in order', async () => {
  const slug = await createAgent('Streamed');
  // 40 model steps, each with a short sleep: about 200 events over several seconds.
  const runId = await start(slug, Array.from({ length: 39 }, () => '/call core.sleep {"ms":60}').join('\n'));
  const url = `${s.baseUrl}/api/build/runs/${runId}/events`;
  const seen: { id: number; event: string; data: unknown }[] = [];
  let reconnects = 0;
  let ended = false;
  while (!ended) {
    const lastEventId = seen.length ? seen[seen.length - 1]!.id : undefined;
    // Leave after one or two events (or a short time) while reconnects are left; then read to the end.
    const read = await readEventStream(url, s.token(), reconnects < 100 ? { lastEventId, stopAfter: 1 + (reconnects % 2), forMs: 400 } : { lastEventId });
    expect(read.status).toBe(200);
    seen.push(...read.events);
    ended = read.ended;
    reconnects++;
  }
  expect(reconnects).toBeGreaterThanOrEqual(100);
  const stored = await fetch(url, { headers: { authorization: `Bearer ${s.token()}`, accept: 'application/json' } });
  const events = ((await stored.json()) as { data: { seq: number; type: string }[] }).data;
  expect(seen.map((e) => e.id)).toEqual(events.map((e) => e.seq));
  expect(seen.map((e) => e.event)).toEqual(events.map((e) => e.type));
  expect(seen.map((e) => e.data)).toEqual(events);
  expect(events[events.length - 1]!.type).toBe('run.finished');
  expect(events.length).toBeGreaterThan(150);
});

test('a shutdown ends open event streams at once (clients resume elsewhere) and the process exits', async () => {
  const other = await startServer();
  try {
    const created = await other.client().PUT('/api/build/agents', {
      body: { ...minimalAgent('Parked'), tools: { apps: ['kv'], connections: 'all', disabled_tools: [], approval: 'write' } },
    });
    const slug = created.data!.data.document.slug;
    const runId = (
      await other.client().POST('/api/build/agents/{ref}/test', { params: { path: { ref: slug } }, body: { prompt: '/call kv.set {"key":"k","value":1}' } })
    ).data!.data.run_id;
    const streams = Array.from({ length: 5 }, () => readEventStream(`${other.baseUrl}/api/build/runs/${runId}/events`, other.token(), { forMs: 20_000 }));
    await new Promise((r) => setTimeout(r, 500)); // the streams are open (the run parks: they stay open)
    const started = Date.now();
    await other.kill('SIGTERM');
    const read = await Promise.all(streams);
    expect(Date.now() - started).toBeLessThan(5000); // not the 10 s grace period
    for (const r of read) {
      expect(r.ended).toBe(true);
      expect(r.events.length).toBeGreaterThan(0);
    }
  } finally {
    await other.dispose();
  }
});
