// A run's acceptance on PostgreSQL: the shared decisions (shared/runs.ts, acceptance) driven with
// this adapter's statements, each awaited in one transaction. Of concurrent deliveries of one key
// (any replica), the later inserts wait for the first to commit, then find its row too recent: 0
// rows, a repeat that writes nothing. The rate's count is one conditional upsert: a second upsert
// of the row (any replica) waits for the first to commit, then judges the count it left.
import type { RunAcceptance } from '../../port';
import { acceptance, rateLimited, type AcceptanceSteps } from '../../shared/runs';
import { CLAIM_DELIVERY, COUNT_DELIVERY_SQL, INSERT_RUN, numbered, PRIOR_DELIVERY, SET_DELIVERY_STATUS } from '../../shared/statements';
import { driveAsync, type Awaited } from '../../shared/steps';
import { DB_NOW } from '../run-events';
import { recordFired, takeFire } from '../schedule-writes';
import { bumpAgentStatus } from '../trigger-status';
import { debit, RUNS_QUEUED_CHANNEL, type PgRunContext, type Tx } from './context';

const claimDelivery = numbered(CLAIM_DELIVERY);
const priorDelivery = numbered(PRIOR_DELIVERY);
const setDeliveryStatus = numbered(SET_DELIVERY_STATUS);
const countDelivery = numbered(COUNT_DELIVERY_SQL);
const insertRun = numbered(INSERT_RUN);
/** A queued run's insert, with the NOTIFY that tells the other replicas (sent when the transaction commits): one round trip. */
const insertQueuedRun = numbered(`WITH inserted AS (${INSERT_RUN} RETURNING id) SELECT pg_notify(@channel, @replica) FROM inserted`);

function acceptanceSteps(ctx: PgRunContext, tx: Tx): Awaited<AcceptanceSteps> {
  return {
    // The acceptance time by the database's clock, as the claims' (the queue's order is by it).
    begin: async (run) => {
      const clock = await tx.row<{ now: string }>(
        `WITH clock AS (SELECT ${DB_NOW} AS now),
          ensured AS (INSERT INTO workspaces (id, credits, created_at) SELECT $1::text, $2::bigint, now FROM clock ON CONFLICT (id) DO NOTHING)
         SELECT now FROM clock`,
        [run.workspaceId, run.initialCredits],
      );
      return (clock as { now: string }).now;
    },
    claimDelivery: async (run, now) =>
      (await tx.count(claimDelivery.text, claimDelivery.values({ trigger: run.triggerId, key: run.delivery?.key, run: run.id, now, since: run.delivery?.since }))) === 1,
    priorDelivery: async (run) =>
      (await tx.row<{ runId: string; httpStatus: number }>(priorDelivery.text, priorDelivery.values({ trigger: run.triggerId, key: run.delivery?.key }))) as {
        runId: string;
        httpStatus: number;
      },
    countDelivery: async (run) => (await tx.count(countDelivery.text, countDelivery.values({ id: run.triggerId, ...run.rate }))) === 1,
    takeFire: (fire, now) => takeFire(tx, fire, now),
    debit: (workspace, amount) => debit(tx, workspace, amount),
    balance: async (workspace) => ((await tx.row<{ credits: number }>('SELECT credits FROM workspaces WHERE id = $1', [workspace])) as { credits: number }).credits,
    insert: async (row) => {
      if (row.status === 'queued') await tx.rows(insertQueuedRun.text, insertQueuedRun.values({ ...row, channel: RUNS_QUEUED_CHANNEL, replica: ctx.self }));
      else await tx.count(insertRun.text, insertRun.values({ ...row }));
    },
    append: (runId, events, now) => tx.append(runId, events, now),
    setDeliveryStatus: async (run, status) => void (await tx.count(setDeliveryStatus.text, setDeliveryStatus.values({ status, trigger: run.triggerId, key: run.delivery?.key }))),
    recordFired: (fire, outcome, runId, detail, now) => recordFired(tx, fire, outcome, runId, detail, now),
    bumpAgentStatus: (agentId) => bumpAgentStatus(tx, agentId),
    // A queued run's insert said so (insertQueuedRun).
    accepted: async () => undefined,
  };
}

export function pgRunAcceptance(ctx: PgRunContext): RunAcceptance {
  return {
    accept: (run, refusal) => ctx.write((tx) => driveAsync(acceptance(run, refusal), acceptanceSteps(ctx, tx))).catch(rateLimited),
  };
}
