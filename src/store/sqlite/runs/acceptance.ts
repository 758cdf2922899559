// A run's acceptance on SQLite: the shared decisions (shared/runs.ts, acceptance) driven with this
// adapter's statements, synchronously inside the write's savepoint.
import type { RunAcceptance, RunRow } from '../../port';
import { COUNT_SENDER_SQL, INSERT_MESSAGE, messageParams, PRIOR_MESSAGE, storedText } from '../../shared/channel-messages';
import { acceptance, rateLimited, type AcceptanceSteps } from '../../shared/runs';
import { CLAIM_DELIVERY, COUNT_DELIVERY_SQL, INSERT_RUN, PRIOR_DELIVERY, SET_DELIVERY_STATUS } from '../../shared/statements';
import { drive } from '../../shared/steps';
import { scheduleWrites } from '../schedules';
import { triggerStatusVersions } from '../trigger-status';
import { sqliteClaims } from './claims';
import type { RunContext } from './context';

export function sqliteRunAcceptance(ctx: RunContext): RunAcceptance {
  const { db, commit, recent } = ctx;
  const ensureWorkspace = db.prepare('INSERT OR IGNORE INTO workspaces (id, credits, created_at) VALUES (?, ?, ?)');
  const balance = db.prepare('SELECT credits FROM workspaces WHERE id = ?').pluck();
  const insert = db.prepare(INSERT_RUN);
  const claimDelivery = db.prepare(CLAIM_DELIVERY);
  const priorDelivery = db.prepare(PRIOR_DELIVERY);
  const setDeliveryStatus = db.prepare(SET_DELIVERY_STATUS);
  const countDelivery = db.prepare(COUNT_DELIVERY_SQL);
  const insertMessage = db.prepare(INSERT_MESSAGE);
  const priorMessage = db.prepare(PRIOR_MESSAGE).pluck();
  const countSender = db.prepare(COUNT_SENDER_SQL);
  const schedules = scheduleWrites(db, commit);
  const statusVersions = triggerStatusVersions(db, commit);
  const claims = sqliteClaims(ctx);

  const steps: AcceptanceSteps = {
    begin: (run) => {
      const now = new Date().toISOString();
      ensureWorkspace.run(run.workspaceId, run.initialCredits, now);
      return now;
    },
    claimMessage: (message, runId) => insertMessage.run(messageParams({ ...message, runId })).changes === 1,
    priorMessage: (m) =>
      (priorMessage.get({ agent: m.agentId, channel: m.channel, direction: m.direction, dedupe_key: storedText(m.dedupeKey) }) as string | null | undefined) ??
      null,
    countSender: (m, rate) => countSender.run({ agent: m.agentId, channel: m.channel, contact: storedText(m.contact), ...rate }).changes === 1,
    claimDelivery: (run, now) =>
      claimDelivery.run({ trigger: run.triggerId, key: run.delivery?.key, run: run.id, now, since: run.delivery?.since }).changes === 1,
    priorDelivery: (run) => priorDelivery.get({ trigger: run.triggerId, key: run.delivery?.key }) as { runId: string; httpStatus: number },
    countDelivery: (run) => countDelivery.run({ id: run.triggerId, ...run.rate }).changes === 1,
    takeFire: (fire, now) => schedules.take(fire, now),
    debit: (workspace, amount) => ctx.debit(workspace, amount),
    balance: (workspace) => balance.get(workspace) as number,
    insert: (row) => void insert.run(row),
    append: (runId, events, now) => ctx.events.append(runId, events, now),
    setDeliveryStatus: (run, status) => void setDeliveryStatus.run({ status, trigger: run.triggerId, key: run.delivery?.key }),
    recordFired: (fire, outcome, runId, detail, now) => schedules.fired(fire, outcome, runId, detail, now),
    bumpAgentStatus: (agentId) => statusVersions.bumpAgent(agentId),
    // An agent run is kept only when its accept names the agent (as the projection query would).
    accepted: (row) => {
      if (row.kind === 'agent' && row.agent_slug === null) return;
      const { agent_slug: slug, agent_name: name, trace_parent: _claimedOnly, ...columns } = row;
      const snapshot = slug === null ? null : JSON.stringify({ slug, name });
      const held: RunRow = {
        ...columns,
        snapshot,
        step_agents: null,
        credits_spent: 0,
        started_at: null,
        cancel_requested_at: null,
        cancelled_by: null,
        approval_expires_at: null,
      };
      recent.keep(held);
    },
    claimAccepted: (runId, claim) => claims.claimIfFair(runId, claim.lease, claim.cap),
  };

  return {
    accept: (run, refusal) => ctx.announcing(run.id, commit.run(() => drive(acceptance(run, refusal), steps)).catch(rateLimited)),
  };
}
