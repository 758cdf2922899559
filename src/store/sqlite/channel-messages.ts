// The channels' messages on SQLite (port/channel-messages.ts): writes in the group commit, reads
// directly. One process serves the file, yet a claim is still a conditional write per message, as
// on PostgreSQL. A received message that starts a run is recorded by the run's acceptance
// (runs/acceptance.ts), with the same statement as record's.
import type { ChannelMessageRepository, ChannelMessageRow } from '../port';
import {
  BOUND_AGENT,
  MAILBOX_OWNER,
  claimMessagesSql,
  DUE_MESSAGES,
  FIND_MESSAGE,
  FINISH_FAILED,
  FINISH_RETRY,
  FINISH_SENT,
  RENEW_CLAIM,
  COUNT_SENDER_SQL,
  SUPPRESSED_CONTACT,
  INSERT_MESSAGE,
  LAST_RECEIVED,
  listMessagesSql,
  messageOfRow,
  messageParams,
  PRUNABLE_MESSAGE,
  PRUNABLE_WINDOW,
  REPORT_STATUS,
  SENT_MESSAGE_ID,
  storedText,
  type MessageRecord,
} from '../shared/channel-messages';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export function channelMessageRepository(db: Db, commit: GroupCommit): ChannelMessageRepository {
  const insert = db.prepare(INSERT_MESSAGE);
  const find = db.prepare(FIND_MESSAGE);
  const sent = db.prepare(SENT_MESSAGE_ID);
  const lastReceived = db.prepare(LAST_RECEIVED).pluck();
  const due = db.prepare(DUE_MESSAGES).pluck();
  const claim = db.prepare(claimMessagesSql('= @id'));
  const renew = db.prepare(RENEW_CLAIM);
  const countSuppressed = db.prepare(COUNT_SENDER_SQL);
  const finish = { sent: db.prepare(FINISH_SENT), failed: db.prepare(FINISH_FAILED), queued: db.prepare(FINISH_RETRY) };
  const report = db.prepare(REPORT_STATUS);
  const lists = [false, true].map((byChannel) => [false, true].map((before) => db.prepare(listMessagesSql(byChannel, before))));
  const prune = db.prepare(
    `DELETE FROM channel_messages WHERE id IN (SELECT id FROM channel_messages WHERE ${PRUNABLE_MESSAGE} LIMIT CAST(@limit AS INTEGER))`,
  );
  const pruneWindows = db.prepare(
    `DELETE FROM channel_sender_windows WHERE rowid IN (SELECT rowid FROM channel_sender_windows WHERE ${PRUNABLE_WINDOW} LIMIT CAST(@limit AS INTEGER))`,
  );
  const bound = db.prepare(BOUND_AGENT).pluck();
  const mailboxOwner = db.prepare(MAILBOX_OWNER);

  const found = (agent: string, channel: string, direction: string, key: string): ChannelMessageRow | null => {
    const row = find.get({ agent, channel, direction, dedupe_key: storedText(key) }) as MessageRecord | undefined;
    return row ? messageOfRow(row) : null;
  };

  return {
    record: (row) =>
      commit.run(() => {
        if (insert.run(messageParams(row)).changes === 1) return { recorded: true };
        return { recorded: false, existing: found(row.agentId, row.channel, row.direction, row.dedupeKey) as ChannelMessageRow };
      }),
    find: async (agentId, channel, direction, dedupeKey) => found(agentId, channel, direction, dedupeKey),
    sentMessageId: async (channel, messageId) => sent.get({ channel, message_id: storedText(messageId) }) !== undefined,
    lastReceivedAt: async (agentId, channel, contact) => (lastReceived.get({ agent: agentId, channel, contact: storedText(contact) }) as string | null) ?? null,
    claimDue: (nowMs, untilMs, limit) =>
      commit.run(() =>
        (due.all({ now: nowMs, limit }) as string[]).flatMap((id) => {
          const row = claim.get({ id, now: nowMs, until: untilMs }) as MessageRecord | undefined;
          return row ? [messageOfRow(row)] : [];
        }),
      ),
    finishSend: (id, attempts, outcome) =>
      commit.run(() => {
        const params =
          outcome.status === 'sent'
            ? {
                sent: outcome.sentAt,
                message_id: outcome.messageId === null ? null : storedText(outcome.messageId),
                note: outcome.note ? storedText(outcome.note) : null,
              }
            : outcome.status === 'failed'
              ? { error: storedText(outcome.error) }
              : { error: storedText(outcome.error), next_attempt: outcome.nextAttemptMs };
        return finish[outcome.status].run({ id, attempts, ...params }).changes === 1;
      }),
    reportStatus: (workspaceId, channel, messageId, status, error) =>
      commit.run(
        () =>
          report.run({ workspace: workspaceId, channel, message_id: storedText(messageId), status, error: error === null ? null : storedText(error) }).changes >
          0,
      ),
    countSuppressed: (agentId, channel, rate) =>
      commit.run(() => countSuppressed.run({ agent: agentId, channel, contact: SUPPRESSED_CONTACT, ...rate }).changes === 1),
    renewClaim: (id, attempts, untilMs) => commit.run(() => renew.run({ id, attempts, until: untilMs }).changes === 1),
    list: async ({ workspaceId, agentId, channel, beforeId, limit }) => {
      const statement = lists[channel === undefined ? 0 : 1]![beforeId === undefined ? 0 : 1]!;
      const params: Record<string, unknown> = { workspace: workspaceId, agent: agentId, limit };
      if (channel !== undefined) params.channel = channel;
      if (beforeId !== undefined) params.before = beforeId;
      return (statement.all(params) as MessageRecord[]).map(messageOfRow);
    },
    prune: (before, limit, windowBefore) =>
      commit.run(() => {
        pruneWindows.run({ window: windowBefore, limit });
        return prune.run({ before, limit }).changes;
      }, 'visible'),
    mailboxOwner: async (mailbox) => (mailboxOwner.get({ address: storedText(mailbox) }) as { workspaceId: string; agentId: string } | undefined) ?? null,
    boundAgent: async (workspaceId, channel, address) =>
      (bound.get({ workspace: workspaceId, channel, address: storedText(address) }) as string | undefined) ?? null,
  };
}
