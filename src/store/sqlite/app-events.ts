// The app_event triggers' listeners and the kv app's pending events on SQLite (one process serves
// the file: a claim is still a conditional write, as on PostgreSQL).
import type { AppEventRepository, EventListener, PendingAppEvent } from '../port';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';

export function appEventRepository(db: Db, commit: GroupCommit): AppEventRepository {
  const ofApp = db.prepare('SELECT id AS triggerId, agent_id AS agentId FROM agent_triggers WHERE workspace_id = ? AND event_app = ?');
  const ofConnection = db.prepare(
    'SELECT id AS triggerId, agent_id AS agentId FROM agent_triggers WHERE workspace_id = ? AND event_app = ? AND event_connection = ?',
  );
  const lapsed = db.prepare(
    `SELECT id, workspace_id AS workspaceId, app, event, payload, chain, created_at AS createdAt FROM app_events_pending
     WHERE claimed_until_ms <= ? ORDER BY created_at, id LIMIT ?`,
  );
  const claim = db.prepare('UPDATE app_events_pending SET claimed_until_ms = ? WHERE id = ? AND claimed_until_ms <= ?');
  const finish = db.prepare('DELETE FROM app_events_pending WHERE id = ?');
  return {
    listeners: async (ws, app, connection) => (connection === undefined ? ofApp.all(ws, app) : ofConnection.all(ws, app, connection)) as EventListener[],
    claimPending: (now, until, limit) =>
      commit.run(() => (lapsed.all(now, limit) as PendingAppEvent[]).filter((e) => claim.run(until, e.id, now).changes === 1)),
    finishPending: (id) =>
      commit.run(() => {
        finish.run(id);
      }),
  };
}
