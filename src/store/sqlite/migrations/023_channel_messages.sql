-- Email and WhatsApp channels (issue 47; docs/channels.md). Every message an agent received or sent
-- is one row: a received one is recorded once per agent (its dedupe key: the Message-ID or wamid),
-- in the write that accepts its run or on its own when it starts none; one to send is queued once
-- per tool call and sent by any process under a lease (next_attempt_ms): the table is the outbox.
-- `to_addresses`: JSON (a list of addresses). `contact`: the other party.
CREATE TABLE channel_messages (
  id               TEXT PRIMARY KEY,
  workspace_id     TEXT NOT NULL,
  agent_id         TEXT NOT NULL,
  channel          TEXT NOT NULL CHECK (channel IN ('email', 'whatsapp')),
  direction        TEXT NOT NULL CHECK (direction IN ('received', 'sent')),
  status           TEXT NOT NULL,
  reason           TEXT,
  from_address     TEXT NOT NULL,
  to_addresses     TEXT NOT NULL,
  subject          TEXT,
  preview          TEXT NOT NULL,
  message_id       TEXT,
  dedupe_key       TEXT NOT NULL,
  contact          TEXT NOT NULL,
  run_id           TEXT,
  created_at       TEXT NOT NULL,
  sent_at          TEXT,
  error            TEXT,
  payload          TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms  INTEGER NOT NULL DEFAULT 0,
  UNIQUE (agent_id, channel, direction, dedupe_key)
) STRICT;
-- The agent's messages, newest first (ids are time-ordered), of both channels or of one.
CREATE INDEX channel_messages_by_agent ON channel_messages (agent_id, id);
CREATE INDEX channel_messages_by_agent_channel ON channel_messages (agent_id, channel, id);
-- A reply to one of ours is a loop; a channel's status report names our message by its id.
CREATE INDEX channel_messages_sent_by_message_id ON channel_messages (channel, message_id) WHERE direction = 'sent';
-- WhatsApp's 24-hour window: the contact's latest message to the agent.
CREATE INDEX channel_messages_received_by_contact ON channel_messages (agent_id, channel, contact, created_at) WHERE direction = 'received';
-- The outbox: the queued messages by when they are due.
CREATE INDEX channel_messages_due ON channel_messages (next_attempt_ms) WHERE status = 'queued';
CREATE INDEX channel_messages_by_time ON channel_messages (created_at);

-- A sender's messages to an agent's channel in the current window (the reply rate), counted by one
-- conditional upsert in the write that accepts the run, as trigger_rate_windows counts a trigger's.
CREATE TABLE channel_sender_windows (
  agent_id      TEXT NOT NULL,
  channel       TEXT NOT NULL,
  contact       TEXT NOT NULL,
  window_start  INTEGER NOT NULL,
  count         INTEGER NOT NULL,
  PRIMARY KEY (agent_id, channel, contact)
) STRICT;
CREATE INDEX channel_sender_windows_by_window ON channel_sender_windows (window_start);

-- One agent per WhatsApp connection: the agent whose document names it (whatsapp.connection, while
-- whatsapp.enabled), kept by the document's writes; the primary key refuses a second agent's.
CREATE TABLE agent_channel_bindings (
  workspace_id  TEXT NOT NULL,
  channel       TEXT NOT NULL,
  address       TEXT NOT NULL,
  agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  PRIMARY KEY (workspace_id, channel, address)
) STRICT;
CREATE INDEX agent_channel_bindings_by_agent ON agent_channel_bindings (agent_id);
-- An agent's mailbox (`<slug>.<workspace tag>`, while email.enabled) is found by the SMTP listener
-- without a workspace, and is one agent's across all of them.
CREATE UNIQUE INDEX agent_channel_bindings_mailbox ON agent_channel_bindings (address) WHERE channel = 'email';
