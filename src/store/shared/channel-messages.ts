// What both adapters run alike for the channels' messages (port/channel-messages.ts): the
// statements, written with `@name` parameters (SQLite binds them by name, PostgreSQL's adapter
// numbers them: statements.ts), the row as the port sees it, and the channel addresses an agent's
// document binds (one agent per WhatsApp connection). A message's texts come from outside (a mail, a
// WhatsApp message): U+0000, which PostgreSQL's text cannot hold, is stored as U+FFFD on both
// stores, and looked up so.
import { agentMailbox } from '../../domain/mail-rules';
import type { Agent } from '../../domain/types';
import type { ChannelMessageRow, ChannelTaken } from '../port';

/** A text as both stores keep it: U+0000 as U+FFFD. */
export const storedText = (text: string): string => text.replaceAll('\u0000', '\uFFFD');
const storedOrNull = (text: string | null): string | null => (text === null ? null : storedText(text));

/** A message's columns, named as ChannelMessageRow names them (`to` still JSON: see messageOfRow). */
const COLUMNS = `id, workspace_id AS "workspaceId", agent_id AS "agentId", channel, direction, status, reason, from_address AS "from",
  to_addresses AS "to", subject, preview, message_id AS "messageId", dedupe_key AS "dedupeKey", contact, run_id AS "runId",
  created_at AS "createdAt", sent_at AS "sentAt", error, payload, attempts, next_attempt_ms AS "nextAttemptMs"`;

/** A message's row as a statement returns it. */
export type MessageRecord = Omit<ChannelMessageRow, 'to'> & { to: string };

export const messageOfRow = (row: MessageRecord): ChannelMessageRow => ({ ...row, to: JSON.parse(row.to) as string[] });

/** A row's parameters for INSERT_MESSAGE (its texts as stored). */
export function messageParams(row: ChannelMessageRow): Record<string, unknown> {
  return {
    id: row.id,
    workspace: row.workspaceId,
    agent: row.agentId,
    channel: row.channel,
    direction: row.direction,
    status: row.status,
    reason: storedOrNull(row.reason),
    sender: storedText(row.from),
    recipients: JSON.stringify(row.to.map(storedText)),
    subject: storedOrNull(row.subject),
    preview: storedText(row.preview),
    message_id: storedOrNull(row.messageId),
    dedupe_key: storedText(row.dedupeKey),
    contact: storedText(row.contact),
    run: row.runId,
    created: row.createdAt,
    sent: row.sentAt,
    error: storedOrNull(row.error),
    payload: storedOrNull(row.payload),
    attempts: row.attempts,
    next_attempt: row.nextAttemptMs,
  };
}

/** The message, unless a row has its (agent, channel, direction, dedupe key): then 0 rows, nothing written. */
export const INSERT_MESSAGE = `INSERT INTO channel_messages (id, workspace_id, agent_id, channel, direction, status, reason, from_address, to_addresses,
    subject, preview, message_id, dedupe_key, contact, run_id, created_at, sent_at, error, payload, attempts, next_attempt_ms)
  VALUES (@id, @workspace, @agent, @channel, @direction, @status, @reason, @sender, @recipients,
    @subject, @preview, @message_id, @dedupe_key, @contact, @run, @created, @sent, @error, @payload, @attempts, @next_attempt)
  ON CONFLICT (agent_id, channel, direction, dedupe_key) DO NOTHING`;

/** The row of a key. Parameters @agent, @channel, @direction, @dedupe_key. */
export const FIND_MESSAGE = `SELECT ${COLUMNS} FROM channel_messages
  WHERE agent_id = @agent AND channel = @channel AND direction = @direction AND dedupe_key = @dedupe_key`;

/** The run a received message's row names (the repeat's answer). Parameters as FIND_MESSAGE's. */
export const PRIOR_MESSAGE = `SELECT run_id AS "runId" FROM channel_messages
  WHERE agent_id = @agent AND channel = @channel AND direction = @direction AND dedupe_key = @dedupe_key`;

export const SENT_MESSAGE_ID = `SELECT 1 AS found FROM channel_messages WHERE channel = @channel AND message_id = @message_id AND direction = 'sent' LIMIT 1`;

export const LAST_RECEIVED = `SELECT MAX(created_at) AS at FROM channel_messages
  WHERE agent_id = @agent AND channel = @channel AND contact = @contact AND direction = 'received'`;

/**
 * Counts one message against its sender's window (as COUNT_DELIVERY_SQL counts a trigger's): a new
 * window starts the count again; within it the row changes only while below @limit. Parameters
 * @agent, @channel, @contact, @window, @limit.
 */
export const COUNT_SENDER_SQL = `INSERT INTO channel_sender_windows (agent_id, channel, contact, window_start, count) VALUES (@agent, @channel, @contact, @window, 1)
  ON CONFLICT (agent_id, channel, contact) DO UPDATE SET
    count = CASE WHEN channel_sender_windows.window_start = excluded.window_start THEN channel_sender_windows.count + 1 ELSE 1 END,
    window_start = excluded.window_start
  WHERE channel_sender_windows.window_start != excluded.window_start OR channel_sender_windows.count < @limit`;

/** The contact under which an agent's channel counts its suppressed messages (no sender's: a sender has an address or a number). */
export const SUPPRESSED_CONTACT = '';

/** Ends a send attempt (SendOutcome) only while it is the message's latest: @id, @attempts. */
const LATEST_ATTEMPT = `WHERE id = @id AND attempts = @attempts AND status = 'queued'`;
export const FINISH_SENT = `UPDATE channel_messages SET status = 'sent', sent_at = @sent, message_id = COALESCE(CAST(@message_id AS TEXT), message_id), error = @note,
    payload = NULL ${LATEST_ATTEMPT}`;
export const FINISH_FAILED = `UPDATE channel_messages SET status = 'failed', error = @error, payload = NULL ${LATEST_ATTEMPT}`;
export const FINISH_RETRY = `UPDATE channel_messages SET error = @error, next_attempt_ms = @next_attempt ${LATEST_ATTEMPT}`;

/** A claim held longer (a send still under way): its lease moves to @until, while the claim is still the latest attempt's. */
export const RENEW_CLAIM = `UPDATE channel_messages SET next_attempt_ms = @until ${LATEST_ATTEMPT}`;

/** A status's place in a sent message's progress (what reportStatus moves forward). */
const rank = (status: string) => `CASE ${status} WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2 WHEN 'read' THEN 3 ELSE 0 END`;
const FORWARD = `(CAST(@status AS TEXT) = 'failed' OR ${rank('CAST(@status AS TEXT)')} > ${rank('status')})`;
/**
 * A reported status, set when it moves the message forward (or fails it). Every sent message with
 * the id is matched (changed or not), so the count says whether one has it. Parameters @channel,
 * @message_id, @status, @error.
 */
export const REPORT_STATUS = `UPDATE channel_messages SET
    error = CASE WHEN CAST(@status AS TEXT) = 'failed' THEN @error ELSE error END,
    status = CASE WHEN ${FORWARD} THEN CAST(@status AS TEXT) ELSE status END
  WHERE workspace_id = @workspace AND channel = @channel AND message_id = @message_id AND direction = 'sent'`;

/** A page of an agent's messages, newest first: @workspace, @agent, @limit, and @channel and @before when given. */
export function listMessagesSql(byChannel: boolean, before: boolean): string {
  return `SELECT ${COLUMNS} FROM channel_messages
    WHERE agent_id = @agent AND workspace_id = @workspace${byChannel ? ' AND channel = @channel' : ''}${before ? ' AND id < @before' : ''}
    ORDER BY id DESC LIMIT CAST(@limit AS INTEGER)`;
}

/** The queued messages due by @now, soonest first, at most @limit (SQLite claims each; PostgreSQL locks them: SKIP LOCKED). */
export const DUE_MESSAGES = `SELECT id FROM channel_messages WHERE status = 'queued' AND next_attempt_ms <= @now ORDER BY next_attempt_ms, id LIMIT CAST(@limit AS INTEGER)`;

/**
 * The claim of due messages (those `ids` names: `= @id`, or `IN (…)`): their lease (@until) and one
 * attempt more, each only while it is still queued and due (another claimer's write is seen).
 */
export const claimMessagesSql = (ids: string) => `UPDATE channel_messages SET next_attempt_ms = @until, attempts = attempts + 1
  WHERE id ${ids} AND status = 'queued' AND next_attempt_ms <= @now RETURNING ${COLUMNS}`;

/** What a message's prune may delete: old enough, and no longer to be sent. */
export const PRUNABLE_MESSAGE = `created_at < @before AND status <> 'queued'`;
export const PRUNABLE_WINDOW = `window_start < @window`;

/** The agent whose mailbox this is (any workspace). */
export const MAILBOX_OWNER = `SELECT workspace_id AS "workspaceId", agent_id AS "agentId" FROM agent_channel_bindings WHERE channel = 'email' AND address = @address`;

/** The agent bound to a channel address of a workspace. */
export const BOUND_AGENT = `SELECT agent_id AS "agentId" FROM agent_channel_bindings WHERE workspace_id = @workspace AND channel = @channel AND address = @address`;

/** A channel address an agent's document binds. */
export interface ChannelBinding {
  channel: 'whatsapp' | 'email';
  address: string;
}

/**
 * The addresses an agent's document binds in `workspaceId`: its mailbox while email is enabled (one
 * agent's in every workspace), its WhatsApp connection while WhatsApp is (documents written before
 * either have none).
 */
export function channelBindings(doc: Agent, workspaceId: string): ChannelBinding[] {
  const { email, whatsapp } = doc as Partial<Agent>;
  return [
    ...(email?.enabled ? [{ channel: 'email' as const, address: agentMailbox(workspaceId, doc.slug) }] : []),
    ...(whatsapp?.enabled && whatsapp.connection ? [{ channel: 'whatsapp' as const, address: storedText(whatsapp.connection) }] : []),
  ];
}

/** Thrown inside an agent's write to undo it whole when another agent holds an address its document binds. */
export class ChannelTakenError extends Error {
  constructor(
    readonly binding: ChannelBinding,
    readonly agentId: string | null,
  ) {
    super(`the ${binding.channel} address '${binding.address}' is bound to another agent`);
  }
}

/** The outcome of a write that ChannelTakenError undid; any other failure as it was. */
export function channelTaken(err: unknown): ChannelTaken {
  if (err instanceof ChannelTakenError) return { ok: false, reason: 'channel_taken', ...err.binding, agentId: err.agentId };
  throw err;
}
