// The credit ledger of one executing run, against a real SQLite store: what it charges, when it
// saves, what its end and its parking write.
import { createLogger } from '../../src/log';
import { createCreditLedger, PROGRESS_INTERVAL_MS } from '../../src/runtime/runner/credit-ledger';
import type { QueuedRun } from '../../src/runtime/runner';
import { claimedRun, openTempStore, queueRun, scriptedAgent, toolWorkflow, type TempStore } from '../helpers/run-store';

const logger = createLogger('silent');
const lease = { owner: 'ledger-test', ms: 60_000 };
let t: TempStore;
beforeEach(() => {
  t = openTempStore();
});
afterEach(() => t.close());

const claimed = (run: Promise<QueuedRun>) => claimedRun(t.store, run, lease);
const row = async (id: string) => (await t.store.runs.find(id))!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('steps are paid from the reservation, then reserved one by one from the balance, never below zero', async () => {
  const run = await claimed(queueRun(t.store, toolWorkflow([{ id: 'a', tool: 'core.echo' }]), { initialCredits: 3 }));
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(2); // 1 reserved on acceptance
  const ledger = createCreditLedger(run, { runs: t.store.runs, logger });
  expect(await ledger.charge()).toBe(true); // the reserved step
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(2);
  expect(await ledger.charge()).toBe(true);
  expect(await ledger.charge()).toBe(true);
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(0);
  expect(await ledger.charge()).toBe(false); // the balance cannot pay
  expect(await ledger.finish({ status: 'succeeded', error: null, state: { done: true } })).toBe(true);
  expect(await row(run.id)).toMatchObject({ status: 'succeeded', credits_spent: 3, state: '{"done":true}' });
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(0);
});

test('what was reserved and not spent goes back to the workspace at the end', async () => {
  const run = await claimed(
    queueRun(
      t.store,
      toolWorkflow([
        { id: 'a', tool: 'core.echo' },
        { id: 'b', tool: 'core.echo' },
        { id: 'c', tool: 'core.echo' },
      ]),
      { initialCredits: 10 },
    ),
  );
  const ledger = createCreditLedger(run, { runs: t.store.runs, logger });
  await ledger.charge();
  await ledger.finish({ status: 'failed', error: 'step b\u0000 failed', state: {} });
  expect(await row(run.id)).toMatchObject({ status: 'failed', credits_spent: 1, error: 'step b\uFFFD failed' }); // NUL replaced (PostgreSQL's text cannot hold it)
  expect(await t.store.workspaces.credits('ws-1', 0)).toBe(9);
});

test('progress is saved at most every PROGRESS_INTERVAL_MS, the latest state, with the events emitted since', async () => {
  const run = await claimed(queueRun(t.store, toolWorkflow([{ id: 'a', tool: 'core.echo' }])));
  const ledger = createCreditLedger(run, { runs: t.store.runs, logger });
  const initial = (await row(run.id)).state;
  await ledger.progress({ n: 1 });
  ledger.emit('step.started', { step: 'a' });
  await ledger.progress({ n: 2 });
  await sleep(5);
  expect((await row(run.id)).state).toBe(initial); // the claim saved the state just now: this save waits
  await sleep(PROGRESS_INTERVAL_MS * 2);
  expect(JSON.parse((await row(run.id)).state)).toEqual({ n: 2 });
  const ownEvents = async () => (await t.store.runs.events(run.id, 0, 10)).map((e) => e.type).filter((type) => type.startsWith('step.'));
  expect(await ownEvents()).toEqual(['step.started']);
  ledger.emit('step.finished', { step: 'a' });
  await ledger.finish({ status: 'succeeded', error: null, state: { n: 3 } }); // the unsaved event goes with the end
  expect(await ownEvents()).toEqual(['step.started', 'step.finished']);
});

test('a stop asked here, or a cancel a save finds in the row, tells the run to stop', async () => {
  const run = await claimed(queueRun(t.store, toolWorkflow([{ id: 'a', tool: 'core.echo' }])));
  const ledger = createCreditLedger(run, { runs: t.store.runs, logger });
  expect(ledger.shouldStop()).toBe(false);
  expect(await t.store.runs.cancel(run.id, 'user-1', new Date().toISOString())).toEqual({ outcome: 'requested' });
  await ledger.progress({ n: 1 });
  await sleep(PROGRESS_INTERVAL_MS * 2);
  expect(ledger.shouldStop()).toBe(true);

  const other = await claimed(queueRun(t.store, toolWorkflow([{ id: 'a', tool: 'core.echo' }])));
  const local = createCreditLedger(other, { runs: t.store.runs, logger });
  local.stop();
  expect(local.shouldStop()).toBe(true);
});

test('parking records the held calls and when they expire; a cancel that came first ends the run cancelled', async () => {
  const run = await claimed(queueRun(t.store, scriptedAgent()));
  const ledger = createCreditLedger(run, { runs: t.store.runs, logger, approvalTimeoutMs: 60_000 });
  await ledger.charge();
  const state = { transcript: [], tool_calls: [], final_text: null, steps: 1 };
  const before = Date.now();
  await ledger.park({ status: 'awaiting_approval', error: null, state, held: [{ id: 'call-1', tool: 'kv.set' }] });
  const parked = await row(run.id);
  expect(parked).toMatchObject({ status: 'awaiting_approval', credits_spent: 1 });
  const expires = Date.parse(parked.approval_expires_at!);
  expect(expires).toBeGreaterThanOrEqual(before + 60_000);
  expect(expires).toBeLessThan(Date.now() + 60_000 + 1000);

  const cancelled = await claimed(queueRun(t.store, scriptedAgent()));
  await t.store.runs.cancel(cancelled.id, 'user-1', new Date().toISOString());
  await createCreditLedger(cancelled, { runs: t.store.runs, logger }).park({
    status: 'awaiting_approval',
    error: null,
    state,
    held: [{ id: 'call-1', tool: 'kv.set' }],
  });
  expect(await row(cancelled.id)).toMatchObject({ status: 'cancelled' });
});
