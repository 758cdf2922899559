// A run's acceptance on PostgreSQL: the shared decisions (shared/runs.ts, acceptance) driven with
// this adapter's statements, each awaited in one transaction. Of concurrent deliveries of one key
// (any replica), the later inserts wait for the first to commit, then find its row too recent: 0
// rows, a repeat that writes nothing. The rate's count is one conditional upsert: a second upsert
// of the row (any replica) waits for the first to commit, then judges the count it left.
import type { NewRun, RunAcceptance } from '../../port';
import { COUNT_SENDER_SQL, INSERT_MESSAGE, messageParams, PRIOR_MESSAGE, storedText } from '../../shared/channel-messages';
import { acceptance, acceptedRun, QUEUED_EVENT, rateLimited, STARTED_EVENT, type AcceptanceSteps } from '../../shared/runs';
import { CLAIM_DELIVERY, COUNT_DELIVERY_SQL, INSERT_RUN, numbered, PRIOR_DELIVERY, SET_DELIVERY_STATUS } from '../../shared/statements';
import { driveAsync, type Awaited } from '../../shared/steps';
import { BALANCE, debitSlotSql, randomSlot } from '../credits';
import { retried } from '../database';
import { appendedEvents, DB_NOW, withEventsAppended } from '../run-events';
import { recordFired, takeFire } from '../schedule-writes';
import { bumpAgentStatus } from '../trigger-status';
import { withDebit, type Debit, type PgRunContext, type Tx } from './context';
import { CLAIM_IF_FAIR, leaseEnd } from './queue';

const claimDelivery = numbered(CLAIM_DELIVERY);
const priorDelivery = numbered(PRIOR_DELIVERY);
const setDeliveryStatus = numbered(SET_DELIVERY_STATUS);
const countDelivery = numbered(COUNT_DELIVERY_SQL);
const insertRun = numbered(INSERT_RUN);
const insertMessage = numbered(INSERT_MESSAGE);
const priorMessage = numbered(PRIOR_MESSAGE);
const countSender = numbered(COUNT_SENDER_SQL);

/**
 * The common acceptance in one statement, committed on its own: a run that no trigger started and
 * that claims no delivery, rate or fire (a test run, a run the API starts), in a workspace whose
 * credit slots exist (credits.ts). The debit of one slot, then, only if it took the credits, the
 * run (accepted by the database's clock) with its first event: queued, or, when the acceptance
 * offers a worker (@cap above 0) and the workspace has fewer than @cap running, claimed for it
 * under its lease, with its run.started event (the claim's writes, as queue.ts's). When the debit
 * took nothing (the slot too low, or no slots yet) nothing is written, and the whole acceptance
 * decides in its transaction (the exact debit refuses the run, or spreads the balance over the
 * slots). The run's row is new, so its first events are numbered from 1 with no lock; the slot is
 * locked from the debit to the commit only, not across round trips.
 */
const [RUN_COLUMNS, RUN_VALUES] = INSERT_RUN.split('VALUES (') as [string, string]; // its values' list ends the text, with its ')'
const claimedThen = (value: string) => `CASE WHEN room.claimed THEN ${value} END`;
const ACCEPTED_FROM_DEBIT =
  `${RUN_COLUMNS.replace('trace_parent)', 'trace_parent, started_at, lease_owner, lease_expires_at)')}SELECT ${RUN_VALUES.slice(0, -1)},
    ${claimedThen('clock.now')}, ${claimedThen('@owner::text')}, ${claimedThen(leaseEnd('@ms'))}
  FROM debited CROSS JOIN clock CROSS JOIN room`
    .replace('@status', "CASE WHEN room.claimed THEN 'running' ELSE 'queued' END")
    .replace('@accepted_at', 'clock.now')
    // In a SELECT, a parameter takes its type from its cast, not from the column it fills.
    .replace('@target_version', '@target_version::integer')
    .replace('@credits_reserved', '@credits_reserved::bigint');
const acceptInOneStatement = numbered(
  withEventsAppended(`${ACCEPTED_FROM_DEBIT} RETURNING id, accepted_at AS at, status`, {
    before: `clock AS (SELECT ${DB_NOW} AS now),
      debited AS (${debitSlotSql({ amount: '@credits_reserved', workspace: '@workspace_id', slot: '@credit_slot' })}),
      room AS (SELECT @cap::integer > 0 AND (SELECT COUNT(*) FROM runs WHERE status = 'running' AND workspace_id = @workspace_id) < @cap::integer AS claimed)`,
    keep: `e.ord = 1 OR w.status = 'running'`, // run.queued, and run.started only when claimed
  }),
);
/** Its events: the first always, the second when it claimed the run. */
const ACCEPTED_EVENTS = [QUEUED_EVENT, STARTED_EVENT];
const claimInTransaction = numbered(CLAIM_IF_FAIR);
const acceptsInOneStatement = (run: NewRun): boolean => !run.delivery && !run.rate && !run.fire && !run.triggerId && !run.message && !run.senderRate;

function acceptanceSteps(tx: Tx, run: NewRun, debit: Debit): Awaited<AcceptanceSteps> {
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
    // Of concurrent acceptances of one message (any replica), the later inserts wait for the first to
    // commit, then find its row: 0 rows, a repeat, whose next statement reads the committed row.
    claimMessage: async (message, runId) => (await tx.count(insertMessage.text, insertMessage.values(messageParams({ ...message, runId })))) === 1,
    priorMessage: async (m) => {
      const key = { agent: m.agentId, channel: m.channel, direction: m.direction, dedupe_key: storedText(m.dedupeKey) };
      return (await tx.row<{ runId: string | null }>(priorMessage.text, priorMessage.values(key)))?.runId ?? null;
    },
    countSender: async (m, rate) =>
      (await tx.count(countSender.text, countSender.values({ agent: m.agentId, channel: m.channel, contact: storedText(m.contact), ...rate }))) === 1,
    claimDelivery: async (run, now) =>
      (await tx.count(
        claimDelivery.text,
        claimDelivery.values({ trigger: run.triggerId, key: run.delivery?.key, run: run.id, now, since: run.delivery?.since }),
      )) === 1,
    priorDelivery: async (run) =>
      (await tx.row<{ runId: string; httpStatus: number }>(priorDelivery.text, priorDelivery.values({ trigger: run.triggerId, key: run.delivery?.key }))) as {
        runId: string;
        httpStatus: number;
      },
    countDelivery: async (run) => (await tx.count(countDelivery.text, countDelivery.values({ id: run.triggerId, ...run.rate }))) === 1,
    takeFire: (fire, now) => takeFire(tx, fire, now),
    debit: (workspace, amount) => debit(tx, workspace, amount),
    balance: async (workspace) => ((await tx.row<{ credits: number }>(BALANCE, [workspace])) as { credits: number }).credits,
    insert: async (row) => {
      await tx.count(insertRun.text, insertRun.values({ ...row }));
      if (row.status === 'queued' && !run.claim) tx.queued();
    },
    append: (runId, events, now) => tx.append(runId, events, now),
    setDeliveryStatus: async (run, status) =>
      void (await tx.count(setDeliveryStatus.text, setDeliveryStatus.values({ status, trigger: run.triggerId, key: run.delivery?.key }))),
    recordFired: (fire, outcome, runId, detail, now) => recordFired(tx, fire, outcome, runId, detail, now),
    bumpAgentStatus: (agentId) => bumpAgentStatus(tx, agentId),
    // A queued run's insert said so (tx.queued).
    accepted: async () => undefined,
    claimAccepted: async (runId, { lease, cap }) => {
      if ((await tx.count(claimInTransaction.text, claimInTransaction.values({ id: runId, owner: lease.owner, ms: lease.ms, cap }))) !== 1) return false;
      await tx.append(runId, [STARTED_EVENT], null);
      return true;
    },
  };
}

export function pgRunAcceptance(ctx: PgRunContext): RunAcceptance {
  const inTransaction: RunAcceptance['accept'] = (run, refusal) =>
    withDebit((debit) => ctx.write((tx) => driveAsync(acceptance(run, refusal), acceptanceSteps(tx, run, debit)))).catch(rateLimited);
  return {
    accept: async (run, refusal) => {
      if (acceptsInOneStatement(run)) {
        const row = acceptedRun(run, '', null); // accepted_at: the statement's clock
        const claim = { cap: run.claim?.cap ?? 0, owner: run.claim?.lease.owner ?? null, ms: run.claim?.lease.ms ?? null };
        const params = acceptInOneStatement.values({ ...row, ...claim, credit_slot: randomSlot(), ...appendedEvents(ACCEPTED_EVENTS, ctx.events.limit) });
        const accepted = await retried(() => ctx.db.row<{ status: string }>(acceptInOneStatement.text, params));
        if (accepted) {
          ctx.eventsAdded(run.id);
          if (!run.claim) ctx.queued();
          return { status: 'queued', claimed: accepted.status === 'running' };
        }
      }
      return inTransaction(run, refusal);
    },
  };
}
