// Agents, workflows and workspace balances on SQLite. The documents are kept by the
// document table (document-table.ts); an agent's trigger rows and channel bindings and both kinds'
// schedule rows follow their document inside its write.
import type { Agent, AgentListItem, Workflow, WorkflowListItem } from '../../domain/types';
import { agentSchedules, workflowSchedules } from '../../domain/triggers';
import type { StampClock } from '../../domain/stamps';
import type { AgentRepository, SecretRow, WorkflowRepository, WorkspaceRepository } from '../port';
import { channelBindings, channelTaken, ChannelTakenError } from '../shared/channel-messages';
import { listedName } from '../shared/documents';
import { SET_TRIGGER_EVENT } from '../shared/statements';
import { triggerPlan } from '../shared/triggers';
import type { Db } from './database';
import { createDocumentTable } from './document-table';
import type { GroupCommit } from './group-commit';
import { scheduleSync } from './schedules';

/** A stamp column (microseconds) as the ISO 8601 text of `formatStamp`, computed by SQLite. */
export const STAMP_SQL = `strftime('%Y-%m-%dT%H:%M:%S', stamp_us / 1000000, 'unixepoch') || '.' || printf('%06d', stamp_us % 1000000) || 'Z'`;

/**
 * An agent's channel bindings follow its document (shared/channel-messages.ts, channelBindings):
 * those it no longer names go, new ones are inserted, unless another agent holds one: then the
 * whole write is undone (ChannelTakenError, its outcome `channel_taken`).
 */
function bindingSync(db: Db) {
  const holder = db.prepare('SELECT agent_id FROM agent_channel_bindings WHERE workspace_id = ? AND channel = ? AND address = ?').pluck();
  // A mailbox is one agent's across workspaces (its tag tells them apart; a clash is refused as any other).
  const mailboxHolder = db.prepare("SELECT agent_id FROM agent_channel_bindings WHERE channel = 'email' AND address = ?").pluck();
  const own = db.prepare('SELECT channel, address FROM agent_channel_bindings WHERE agent_id = ?');
  const release = db.prepare('DELETE FROM agent_channel_bindings WHERE agent_id = ? AND channel = ? AND address = ?');
  const bind = db.prepare('INSERT INTO agent_channel_bindings (workspace_id, channel, address, agent_id) VALUES (?, ?, ?, ?)');
  return (workspaceId: string, agentId: string, doc: Agent) => {
    const wanted = channelBindings(doc, workspaceId);
    const held = own.all(agentId) as { channel: string; address: string }[];
    for (const h of held) if (!wanted.some((w) => w.channel === h.channel && w.address === h.address)) release.run(agentId, h.channel, h.address);
    for (const w of wanted) {
      const bound = (w.channel === 'email' ? mailboxHolder.get(w.address) : holder.get(workspaceId, w.channel, w.address)) as string | undefined;
      if (bound === agentId) continue;
      if (bound !== undefined) throw new ChannelTakenError(w, bound);
      bind.run(workspaceId, w.channel, w.address, agentId);
    }
  };
}

export function agentRepository(db: Db, commit: GroupCommit, clock: StampClock): AgentRepository {
  const schedules = scheduleSync(db);
  const bindings = bindingSync(db);
  const insertTrigger = db.prepare('INSERT OR IGNORE INTO agent_triggers (id, agent_id, kind) VALUES (?, ?, ?)');
  const setSecret = db.prepare('UPDATE agent_triggers SET secret_hash = ?, secret_prefix = ?, signing_secret = ? WHERE id = ? AND agent_id = ?');
  const clearSigning = db.prepare('UPDATE agent_triggers SET signing_secret = NULL WHERE id = ? AND signing_secret IS NOT NULL');
  const triggerIds = db.prepare('SELECT id FROM agent_triggers WHERE agent_id = ?').pluck();
  const deleteTrigger = db.prepare('DELETE FROM agent_triggers WHERE id = ?');
  const setTriggerEvent = db.prepare(SET_TRIGGER_EVENT);
  // A secret that stops opening its trigger is remembered (by hash), so a delivery to it is 410, not 404.
  const retire = db.prepare(
    `INSERT OR IGNORE INTO retired_webhook_secrets (secret_hash, trigger_id, reason, retired_at)
     SELECT secret_hash, id, @reason, @now FROM agent_triggers WHERE id = @id AND secret_hash IS NOT NULL AND secret_hash != @keep`,
  );
  const table = createDocumentTable<Agent, SecretRow[], AgentListItem[]>(db, commit, clock, {
    table: 'agents',
    maxSlugLength: 160,
    listSql: `SELECT json_group_array(json_object('id', id, 'slug', slug, 'name', name, 'status', status, 'updated_at', ${STAMP_SQL},
        'space', json_object('team', team), 'folder', folder))
      FROM (SELECT id, slug, name, status, stamp_us, team, folder FROM agents WHERE workspace_id = ? ORDER BY slug)`,
    columns: { name: (doc) => listedName(doc.name), status: (doc) => doc.status, team: (doc) => doc.space.team, folder: (doc) => doc.folder },
    // Trigger rows follow the document (see shared/triggers.ts).
    afterWrite: (agentId, doc, secrets = [], workspaceId) => {
      bindings(workspaceId, agentId, doc);
      schedules.sync(workspaceId, agentId, agentSchedules(doc), Date.now());
      const now = new Date().toISOString();
      const plan = triggerPlan(doc);
      const keep = new Set(plan.keep.map((t) => t.id));
      for (const id of triggerIds.all(agentId) as string[]) {
        if (keep.has(id)) continue;
        retire.run({ id, reason: 'dropped', now, keep: '' });
        deleteTrigger.run(id);
      }
      for (const t of plan.keep) insertTrigger.run(t.id, agentId, t.kind);
      for (const e of plan.events) setTriggerEvent.run({ ws: workspaceId, app: e.app, connection: e.connection, id: e.id, agent: agentId });
      for (const id of plan.unsigned) clearSigning.run(id);
      for (const s of secrets) {
        retire.run({ id: s.triggerId, reason: 'rotated', now, keep: s.hash });
        setSecret.run(s.hash, s.prefix, s.signingSecret, s.triggerId, agentId);
      }
    },
  });
  return {
    list: async (workspaceId) => table.list(workspaceId),
    find: async (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, secrets, meta) => table.create(workspaceId, id, doc, opts, meta, secrets).catch(channelTaken),
    replace: (workspaceId, id, expected, doc, secrets, meta) => table.replace(workspaceId, id, expected, doc, meta, secrets).catch(channelTaken),
    versions: table.versions,
  };
}

export function workflowRepository(db: Db, commit: GroupCommit, clock: StampClock): WorkflowRepository {
  const schedules = scheduleSync(db);
  const table = createDocumentTable<Workflow, undefined, WorkflowListItem[]>(db, commit, clock, {
    table: 'workflows',
    maxSlugLength: 80,
    listSql: `SELECT json_group_array(json_object('slug', slug, 'name', name, 'enabled', json(CASE enabled WHEN 1 THEN 'true' ELSE 'false' END), 'version', version, 'updated_at', ${STAMP_SQL},
        'space', json_object('team', team)))
      FROM (SELECT slug, name, enabled, version, stamp_us, team FROM workflows WHERE workspace_id = ? ORDER BY slug)`,
    columns: { name: (doc) => listedName(doc.name), enabled: (doc) => (doc.enabled ? 1 : 0), team: (doc) => doc.space?.team ?? null },
    // The workflow's schedule row follows it, like an agent's (see scheduleSync).
    afterWrite: (id, doc, _extra, workspaceId) => schedules.sync(workspaceId, id, workflowSchedules(id, doc), Date.now()),
    afterRemove: (id) => schedules.removeOwner(id),
  });
  return {
    list: async (workspaceId) => table.list(workspaceId),
    find: async (workspaceId, ref) => table.find(workspaceId, ref),
    create: (workspaceId, id, doc, opts, meta) => table.create(workspaceId, id, doc, { ...opts, deriveSlug: false }, meta),
    replace: (workspaceId, id, expected, doc, meta) => table.replace(workspaceId, id, expected, doc, meta),
    remove: (workspaceId, id) => table.remove(workspaceId, id),
    versions: table.versions,
  };
}

export function workspaceRepository(db: Db, commit: GroupCommit): WorkspaceRepository {
  const ensure = db.prepare('INSERT OR IGNORE INTO workspaces (id, credits, created_at) VALUES (?, ?, ?)');
  const credits = db.prepare('SELECT credits FROM workspaces WHERE id = ?').pluck();
  const set = db.prepare(
    `INSERT INTO workspaces (id, credits, created_at) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET credits = excluded.credits`,
  );
  return {
    credits: (workspaceId, initial) =>
      commit.run(() => {
        ensure.run(workspaceId, initial, new Date().toISOString());
        return credits.get(workspaceId) as number;
      }),
    setCredits: (workspaceId, amount) =>
      commit.run(() => {
        set.run(workspaceId, amount, new Date().toISOString());
      }),
  };
}
