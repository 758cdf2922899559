// Evals across crashes: an eval of 20 runs (each sleeps) is driven while the server is killed
// (SIGKILL) twice mid-way and started again on the same database. The eval still finishes, and
// afterwards: every row has one run and was graded once (one `eval.run_started` and one
// `eval.run_graded` each, no run besides them), a run the kill cut off is `errored` on every
// criterion (never `failed`: the agent was not at fault), the events are numbered without a gap
// and end with `eval.finished`, nothing is held, and the credits add up.
import { INTERRUPTED } from '../../src/runtime/runner';
import { storeUnderTest } from '../helpers/database';
import { minimalAgent } from '../helpers/fixtures';
import { storedRows, storedValue } from '../helpers/stored';
import { startServer, type ServerProcess } from './server';

jest.setTimeout(180_000);

const CREDITS = 10_000;
const CASES = 10;
const REPEATS = 2;

let s: ServerProcess;
beforeAll(async () => {
  // The shortest lease: a killed process's evals (and, with PostgreSQL, its runs) are taken over within seconds.
  s = await startServer({ DEFAULT_CREDITS: String(CREDITS), RUN_LEASE_SECONDS: '2' });
});
afterAll(() => s.dispose());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test(`an eval of ${CASES * REPEATS} runs survives two kills mid-way: one run and one grading per row, cut-off runs errored, credits conserved`, async () => {
  const agent = await s.client().PUT('/api/build/agents', {
    body: {
      ...minimalAgent('Sleeper'),
      max_steps: 3,
      tools: { apps: ['core'], connections: 'all', disabled_tools: [], approval: 'destructive' },
      eval_criteria: [
        { type: 'tool_called', id: 'slept', tool: 'core.sleep' },
        { type: 'run_status', id: 'ends-well', status: 'succeeded' },
      ],
    },
  });
  expect(agent.response.status).toBe(201);
  const cases = Array.from({ length: CASES }, (_, i) => ({ id: `case-${i}`, prompt: `/call core.sleep {"ms":400}\ncase ${i}` }));
  const dataset = await s.client().PUT('/api/build/eval-datasets', { body: { kind: 'service.eval-dataset/v1', slug: 'sleeps', name: 'Sleeps', cases } });
  expect(dataset.response.status).toBe(201);
  const started = await s.client().POST('/api/build/agents/{ref}/evals', {
    params: { path: { ref: 'sleeper' } },
    body: { dataset: 'sleeps', repeats: REPEATS },
  });
  expect(started.response.status).toBe(202);
  const evalId = started.data!.data.id;

  // Once some runs are under way, and again later: between a run's record and its acceptance, mid-run, mid-grading.
  for (const after of [1200, 1700]) {
    await sleep(after);
    await s.kill('SIGKILL');
    await s.restart();
  }

  let read = await s.client().GET('/api/build/evals/{evalId}', { params: { path: { evalId } } });
  for (let i = 0; i < 600 && read.data?.data.status !== 'finished' && read.data?.data.status !== 'failed'; i++) {
    await sleep(100);
    read = await s.client().GET('/api/build/evals/{evalId}', { params: { path: { evalId } } });
  }
  const done = read.data!.data;
  expect(done.status).toBe('finished');
  expect(done.results).toHaveLength(CASES * REPEATS);

  // One run per row, none besides; every run ended.
  const runs = await storedRows<{ id: string; status: string; error: string | null }>(s, "SELECT id, status, error FROM runs WHERE source = 'eval'");
  const runIds = done.results.map((r) => r.run_id);
  expect(new Set(runIds).size).toBe(runIds.length);
  expect([...runIds].sort()).toEqual(runs.map((r) => r.id).sort());
  expect(runs.filter((r) => r.status === 'queued' || r.status === 'running')).toEqual([]);

  // Each row graded by how its run ended: whole runs pass both checks; cut-off runs are errored, never failed.
  const byId = new Map(runs.map((r) => [r.id, r]));
  for (const row of done.results) {
    const run = byId.get(row.run_id!)!;
    expect(row.run_status).toBe(run.status);
    const outcomes = row.criteria.map((c) => c.outcome);
    if (run.status === 'succeeded') expect({ row: row.case_id, outcomes }).toEqual({ row: row.case_id, outcomes: ['passed', 'passed'] });
    else
      expect({ row: row.case_id, status: run.status, error: run.error, outcomes }).toEqual({
        row: row.case_id,
        status: 'failed',
        error: INTERRUPTED,
        outcomes: ['errored', 'errored'],
      });
  }
  const cutOff = done.results.filter((r) => r.run_status !== 'succeeded').length;
  expect(done.summary.criteria).toMatchObject({ passed: 2 * (runIds.length - cutOff), errored: 2 * cutOff, failed: 0, pending: 0 });

  // The events: numbered from 1 without a gap, one start and one grading per row, the end last.
  const events = await storedRows<{ seq: number; type: string; data: string }>(s, 'SELECT seq, type, data FROM eval_events WHERE eval_id = ? ORDER BY seq', [
    evalId,
  ]);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  const runsOf = (type: string) =>
    events
      .filter((e) => e.type === type)
      .map((e) => (JSON.parse(e.data) as { run_id: string }).run_id)
      .sort();
  expect(runsOf('eval.run_started')).toEqual([...runIds].sort());
  expect(runsOf('eval.run_graded')).toEqual([...runIds].sort());
  expect(events[0]!.type).toBe('eval.queued');
  expect(events.filter((e) => e.type === 'eval.finished')).toEqual([events[events.length - 1]]);

  // Nothing held by the eval, nor by its runs past what they spent (an ended run's reservation is
  // what it spent); the balance is what it was less that.
  expect(Number(await storedValue(s, 'SELECT held FROM evals WHERE id = ?', [evalId]))).toBe(0);
  const [{ balance, spent, reserved }] = (await storedRows<{ balance: number; spent: number; reserved: number }>(
    s,
    `SELECT (SELECT credits FROM workspace_balances WHERE id = ?) AS balance,
            CAST((SELECT COALESCE(SUM(credits_spent), 0) FROM runs WHERE workspace_id = ?) AS BIGINT) AS spent,
            CAST((SELECT COALESCE(SUM(credits_reserved), 0) FROM runs WHERE workspace_id = ?) AS BIGINT) AS reserved`,
    ['ws-1', 'ws-1', 'ws-1'],
  )) as [{ balance: number; spent: number; reserved: number }];
  expect([Number(balance), Number(reserved)]).toEqual([CREDITS - Number(spent), Number(spent)]);
  expect(done.summary.credits.agent).toBe(Number(spent));
  process.stdout.write(`eval-crash (${storeUnderTest}): ${runIds.length} runs, ${cutOff} cut off by the kills\n`);
});
