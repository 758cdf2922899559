// What the channels need of the store (docs/channels.md): every message an agent received or sent
// by email or WhatsApp, in one table. A received message is recorded once per agent (its dedupe key
// is unique), in the write that accepts its run or, when it starts none, on its own with the
// reason. A message to send is queued once per tool call (its key is the run and the call), and any
// process sends it under a lease: the table is the outbox.

export type MessageChannel = 'email' | 'whatsapp';
export type MessageDirection = 'received' | 'sent';
export type MessageStatus = 'received' | 'suppressed' | 'queued' | 'sent' | 'delivered' | 'read' | 'failed' | 'unsent';

export interface ChannelMessageRow {
  /** Time-ordered (uuidV7): the list's keyset. */
  id: string;
  workspaceId: string;
  agentId: string;
  channel: MessageChannel;
  direction: MessageDirection;
  status: MessageStatus;
  /** Why a received message started nothing, or why a sent one is unsent. */
  reason: string | null;
  from: string;
  to: string[];
  subject: string | null;
  /** The first 200 characters of the text. */
  preview: string;
  /** The email's Message-ID or WhatsApp's message id (wamid), once known. */
  messageId: string | null;
  /**
   * Unique per (agent, channel, direction): a received message's Message-ID or wamid (a hash of the
   * raw message when it has none); a sent one's `<run id>:<tool call id>`.
   */
  dedupeKey: string;
  /** The other party: a received message's sender, a sent one's recipient (the per-sender rate, WhatsApp's 24-hour window). */
  contact: string;
  runId: string | null;
  createdAt: string;
  sentAt: string | null;
  /** The last send attempt's error (queued: it will be retried; failed: the final one). */
  error: string | null;
  /** A message to send: what the sender needs (JSON, the channel's own shape); null once it is no longer needed. */
  payload: string | null;
  /** Send attempts made (a claim counts one). */
  attempts: number;
  /** A queued message: when it may be (re)claimed, epoch ms (the lease of a claim, or the retry's time). */
  nextAttemptMs: number;
}

/**
 * The row a run's acceptance records with it (NewRun.message): recorded only when no row has its
 * key (then the run is a repeat, and nothing is written). Its runId is the accepted run's, whatever
 * this row says.
 */
export type ReceivedMessage = ChannelMessageRow & { direction: 'received'; status: 'received' };

/**
 * The reply rate: a sender's messages to an agent's channel within one window, counted in the
 * acceptance's write as a trigger's rate is (keyed by the message's agent, channel and contact).
 */
export interface SenderRate {
  /** A number naming the window (e.g. the hour since the epoch): a new number starts the count again. */
  window: number;
  /** The most runs a sender starts in a window. */
  limit: number;
}

export type RecordOutcome = { recorded: true } | { recorded: false; existing: ChannelMessageRow };

/** How a send attempt ended. */
export type SendOutcome =
  /** `note`: what the channel said besides taking it (recipients a relay refused), kept in `error`. */
  | { status: 'sent'; sentAt: string; messageId: string | null; note?: string | null }
  | { status: 'failed'; error: string }
  | { status: 'queued'; error: string; nextAttemptMs: number };

export interface ChannelMessageQuery {
  workspaceId: string;
  agentId: string;
  channel?: MessageChannel;
  /** Only ids below this one (the cursor). */
  beforeId?: string;
  limit: number;
}

export interface ChannelMessageRepository {
  /**
   * Records a message (a received one that starts nothing, or one to send) unless a row has its
   * (agent, channel, direction, dedupe key): then that row, and nothing is written.
   */
  record(row: ChannelMessageRow): Promise<RecordOutcome>;
  /** The row of that key, if any. */
  find(agentId: string, channel: MessageChannel, direction: MessageDirection, dedupeKey: string): Promise<ChannelMessageRow | null>;
  /** Whether the service sent a message with this Message-ID (or wamid) on the channel (a reply to one of ours is a loop). */
  sentMessageId(channel: MessageChannel, messageId: string): Promise<boolean>;
  /** When the contact's latest received message to the agent's channel arrived (WhatsApp's 24-hour window), or null. */
  lastReceivedAt(agentId: string, channel: MessageChannel, contact: string): Promise<string | null>;
  /**
   * Claims at most `limit` queued messages whose next attempt is due (≤ nowMs), oldest first: each
   * is moved to nextAttemptMs = untilMs (the lease) with attempts + 1, by one process at a time.
   */
  claimDue(nowMs: number, untilMs: number, limit: number): Promise<ChannelMessageRow[]>;
  /** Ends the attempt `attempts` of a claimed message; false (nothing written) when the claim was lost (another attempt began). */
  finishSend(id: string, attempts: number, outcome: SendOutcome): Promise<boolean>;
  /**
   * A status the channel reported for a sent message of the workspace (WhatsApp's delivered, read,
   * failed), by its message id; false when no sent message of the workspace has it. Reports arrive out of order, so a status only
   * moves forward (queued, failed, unsent < sent < delivered < read: a late `delivered` leaves
   * `read`); `failed` always applies, with its `error` (other reports leave the error as it is).
   */
  reportStatus(
    workspaceId: string,
    channel: MessageChannel,
    messageId: string,
    status: 'sent' | 'delivered' | 'read' | 'failed',
    error: string | null,
  ): Promise<boolean>;
  /**
   * Counts one suppressed message of the agent's channel in `rate.window` (kept apart from the
   * senders' windows); false, nothing counted, past `rate.limit`: a flood of mail that starts
   * nothing cannot fill the table.
   */
  countSuppressed(agentId: string, channel: MessageChannel, rate: SenderRate): Promise<boolean>;
  /** Holds the claim of attempt `attempts` until `untilMs` (its send takes longer than the lease); false when the claim was lost. */
  renewClaim(id: string, attempts: number, untilMs: number): Promise<boolean>;
  /** A page of the agent's messages (of `channel`, when given), newest first (by id), below `beforeId` when given. */
  list(query: ChannelMessageQuery): Promise<ChannelMessageRow[]>;
  /**
   * Deletes at most `limit` messages created before `before` that are no longer queued, and at most
   * `limit` senders' rate windows numbered below `windowBefore` (SenderRate.window: the current
   * window's number, whose rows still count); how many messages.
   */
  prune(before: string, limit: number, windowBefore: number): Promise<number>;
  /**
   * The agent bound to a channel address of the workspace (WhatsApp: the `whatsapp.connection` its
   * document names while `whatsapp.enabled`; one agent per connection), or null.
   */
  boundAgent(workspaceId: string, channel: MessageChannel, address: string): Promise<string | null>;
  /** The agent whose mailbox (the local part of its address: domain/mail-rules.ts, agentMailbox) this is, in any workspace, while its email is enabled. */
  mailboxOwner(mailbox: string): Promise<{ workspaceId: string; agentId: string } | null>;
}
