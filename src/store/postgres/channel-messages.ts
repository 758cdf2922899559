// The channels' messages on PostgreSQL (port/channel-messages.ts), for any number of replicas: each
// write one statement, committed on its own and judged by its affected-row count. Of concurrent
// records of one key, the later inserts wait for the first to commit, then find its row (0 rows);
// the next statement reads it. Claimers lock the due messages they take (SKIP LOCKED): each goes to
// one replica, which holds it under its lease. A received message that starts a run is recorded by
// the run's acceptance (runs/acceptance.ts), with the same statement as record's.
import type { ChannelMessageRepository, ChannelMessageRow, MessageChannel, MessageDirection } from '../port';
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
import { numbered } from '../shared/statements';
import type { PgDatabase } from './database';

const insert = numbered(INSERT_MESSAGE);
const find = numbered(FIND_MESSAGE);
const sent = numbered(SENT_MESSAGE_ID);
const lastReceived = numbered(LAST_RECEIVED);
const claim = numbered(claimMessagesSql(`IN (${DUE_MESSAGES} FOR UPDATE SKIP LOCKED)`));
const finish = { sent: numbered(FINISH_SENT), failed: numbered(FINISH_FAILED), queued: numbered(FINISH_RETRY) };
const report = numbered(REPORT_STATUS);
const renew = numbered(RENEW_CLAIM);
const countSuppressed = numbered(COUNT_SENDER_SQL);
const lists = [false, true].map((byChannel) => [false, true].map((before) => numbered(listMessagesSql(byChannel, before))));
// By ctid (PostgreSQL has no rowid); the condition is checked again on the row deleted, in case another writer changed it.
const prune = numbered(
  `DELETE FROM channel_messages WHERE ctid = ANY (ARRAY(SELECT ctid FROM channel_messages WHERE ${PRUNABLE_MESSAGE} LIMIT @limit)) AND ${PRUNABLE_MESSAGE}`,
);
const pruneWindows = numbered(
  `DELETE FROM channel_sender_windows WHERE ctid = ANY (ARRAY(SELECT ctid FROM channel_sender_windows WHERE ${PRUNABLE_WINDOW} LIMIT @limit))
   AND ${PRUNABLE_WINDOW}`,
);
const bound = numbered(BOUND_AGENT);
const mailboxOwner = numbered(MAILBOX_OWNER);

export function pgChannelMessageRepository(db: PgDatabase): ChannelMessageRepository {
  const found = async (agent: string, channel: MessageChannel, direction: MessageDirection, key: string): Promise<ChannelMessageRow | null> => {
    const row = await db.row<MessageRecord>(find.text, find.values({ agent, channel, direction, dedupe_key: storedText(key) }));
    return row ? messageOfRow(row) : null;
  };
  return {
    record: async (row) => {
      // A row pruned between the insert that met it and the read is gone: the insert is tried again.
      for (;;) {
        if ((await db.count(insert.text, insert.values(messageParams(row)))) === 1) return { recorded: true };
        const existing = await found(row.agentId, row.channel, row.direction, row.dedupeKey);
        if (existing) return { recorded: false, existing };
      }
    },
    find: found,
    sentMessageId: async (channel, messageId) => (await db.row(sent.text, sent.values({ channel, message_id: storedText(messageId) }))) !== undefined,
    lastReceivedAt: async (agentId, channel, contact) => {
      const row = await db.row<{ at: string | null }>(lastReceived.text, lastReceived.values({ agent: agentId, channel, contact: storedText(contact) }));
      return row?.at ?? null;
    },
    claimDue: async (nowMs, untilMs, limit) => {
      const rows = await db.rows<MessageRecord>(claim.text, claim.values({ now: nowMs, until: untilMs, limit }));
      return rows.map(messageOfRow).sort((a, b) => (a.id < b.id ? -1 : 1));
    },
    finishSend: async (id, attempts, outcome) => {
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
      const statement = finish[outcome.status];
      return (await db.count(statement.text, statement.values({ id, attempts, ...params }))) === 1;
    },
    reportStatus: async (workspaceId, channel, messageId, status, error) => {
      const params = { workspace: workspaceId, channel, message_id: storedText(messageId), status, error: error === null ? null : storedText(error) };
      return (await db.count(report.text, report.values(params))) > 0;
    },
    countSuppressed: async (agentId, channel, rate) =>
      (await db.count(countSuppressed.text, countSuppressed.values({ agent: agentId, channel, contact: SUPPRESSED_CONTACT, ...rate }))) === 1,
    renewClaim: async (id, attempts, untilMs) => (await db.count(renew.text, renew.values({ id, attempts, until: untilMs }))) === 1,
    list: async ({ workspaceId, agentId, channel, beforeId, limit }) => {
      const statement = lists[channel === undefined ? 0 : 1]![beforeId === undefined ? 0 : 1]!;
      const rows = await db.rows<MessageRecord>(statement.text, statement.values({ workspace: workspaceId, agent: agentId, limit, channel, before: beforeId }));
      return rows.map(messageOfRow);
    },
    prune: async (before, limit, windowBefore) => {
      await db.count(pruneWindows.text, pruneWindows.values({ window: windowBefore, limit }));
      return db.count(prune.text, prune.values({ before, limit }));
    },
    mailboxOwner: async (mailbox) =>
      (await db.row<{ workspaceId: string; agentId: string }>(mailboxOwner.text, mailboxOwner.values({ address: storedText(mailbox) }))) ?? null,
    boundAgent: async (workspaceId, channel, address) =>
      (await db.row<{ agentId: string }>(bound.text, bound.values({ workspace: workspaceId, channel, address: storedText(address) })))?.agentId ?? null,
  };
}
