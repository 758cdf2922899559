// Schedules across crashes, in real time: 20 workflows scheduled every minute; the server is
// killed (SIGKILL) just before and just after two minute boundaries and started again. Afterwards
// every due time from the first to the last is decided exactly once (a schedule_fires row each, no
// gap, no repeat) and every `fired` row has exactly one run, and no schedule has a run without one.
import { storeUnderTest } from '../helpers/database';
import { storedRows } from '../helpers/stored';
import { startServer, type ServerProcess } from './server';

const SCHEDULES = 20;
const MINUTE = 60_000;
const sleepUntil = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - Date.now())));

let s: ServerProcess;
beforeAll(async () => {
  // PostgreSQL: a killed process's runs are failed once their lease passes (not at the next start): the shortest lease, well within the final wait.
  s = await startServer(storeUnderTest === 'postgres' ? { RUN_LEASE_SECONDS: '2' } : {});
});
afterAll(() => s.dispose());

test(
  'every due time fires once across kills around the due times',
  async () => {
    for (let i = 0; i < SCHEDULES; i++) {
      const res = await s.client().PUT('/api/build/workflows', {
        body: {
          kind: 'service.workflow/v1',
          slug: `every-minute-${i}`,
          name: `Every minute ${i}`,
          schedule: { cron: '* * * * *', timezone: 'UTC' },
          steps: [{ id: 'a', kind: 'tool', tool: 'core.echo' }],
        },
      });
      expect(res.response.status).toBe(201);
    }
    const firstDue = Math.ceil((Date.now() + 1) / MINUTE) * MINUTE;
    for (const boundary of [firstDue, firstDue + MINUTE]) {
      await sleepUntil(boundary - 700);
      await s.kill('SIGKILL'); // down across the due time: it fires as the catch-up when the server is back
      await s.restart();
      await sleepUntil(boundary + 1000);
      await s.kill('SIGKILL'); // around the scheduler's decision of the due time
      await s.restart();
    }
    await sleepUntil(firstDue + MINUTE + 10_000); // the last due time decided, its runs done (room for a slow restart)

    const fires = await storedRows<{ schedule_id: string; due_at: number; outcome: string; run_id: string | null }>(
      s,
      `SELECT schedule_id, due_at, outcome, run_id FROM schedule_fires ORDER BY schedule_id, due_at`,
    );
    const runs = await storedRows<{ id: string; started_by: string; status: string }>(s, `SELECT id, started_by, status FROM runs WHERE source = 'schedule'`);
    const schedules = (await storedRows<{ id: string }>(s, `SELECT id FROM schedules`)).map((r) => r.id);
    expect(schedules).toHaveLength(SCHEDULES);
    for (const id of schedules) {
      const own = fires.filter((f) => f.schedule_id === id);
      // No gap and no repeat: exactly the due times that passed.
      expect({ id, due: own.map((f) => f.due_at) }).toEqual({ id, due: [firstDue, firstDue + MINUTE] });
      for (const f of own) expect(['fired', 'overlap']).toContain(f.outcome);
      const fired = own
        .filter((f) => f.outcome === 'fired')
        .map((f) => f.run_id)
        .sort();
      const theirRuns = runs
        .filter((r) => r.started_by === `schedule:${id}`)
        .map((r) => r.id)
        .sort();
      expect(theirRuns).toEqual(fired); // one run per fire, none besides
    }
    // Runs left running by a kill were failed (at the next start; with PostgreSQL once their lease passed); none is left in between.
    expect(runs.filter((r) => r.status === 'queued' || r.status === 'running')).toEqual([]);
  },
  4 * MINUTE,
);
