// The app_event triggers' listeners and the kv app's pending events on SQLite (one process serves
// the file: a claim is still a conditional write, as on PostgreSQL).
import type { AppEventRepository, EventListener, PendingAppEvent } from '../port';
import type { Db } from './database';
import type { GroupCommit } from './group-commit';
import { triggerStatusVersions } from './trigger-status';

export function appEventRepository(db: Db, commit: GroupCommit): AppEventRepository {
  const ofApp = db.prepare('SELECT id AS triggerId, agent_id AS agentId FROM agent_triggers WHERE workspace_id = ? AND event_app = ?');
  const ofConnection = db.prepare(
    'SELECT id AS triggerId, agent_id AS agentId FROM agent_triggers WHERE workspace_id = ? AND event_app = ? AND event_connection = ?',
  );
  const lapsed = db.prepare(
    `SELECT id, workspace_id AS workspaceId, app, event, payload, chain, created_at AS createdAt FROM app_events_pending
     WHERE claimed_until_ms <= ? ORDER BY created_at, id LIMIT CAST(? AS INTEGER)`,
  );
  const claim = db.prepare('UPDATE app_events_pending SET claimed_until_ms = ? WHERE id = ? AND claimed_until_ms <= ?');
  const finish = db.prepare('DELETE FROM app_events_pending WHERE id = ?');
  const setError = db.prepare('UPDATE agent_triggers SET last_error = ?, last_error_at = ? WHERE id = ? AND agent_id = ?');
  const errorsOf = db.prepare('SELECT id, last_error AS error, last_error_at AS at FROM agent_triggers WHERE agent_id = ? AND last_error IS NOT NULL');
  const versions = triggerStatusVersions(db, commit);
  return {
    listeners: async (ws, app, connection) => (connection === undefined ? ofApp.all(ws, app) : ofConnection.all(ws, app, connection)) as EventListener[],
    claimPending: (now, until, limit) =>
      commit.run(() => (lapsed.all(now, limit) as PendingAppEvent[]).filter((e) => claim.run(until, e.id, now).changes === 1)),
    finishPending: (id) =>
      commit.run(() => {
        finish.run(id);
      }),
    recordError: (agentId, triggerId, error, at) =>
      commit.run(() => {
        if (setError.run(error, at, triggerId, agentId).changes === 1) versions.bumpAgent(agentId);
      }),
    errors: async (agentId) => new Map((errorsOf.all(agentId) as { id: string; error: string; at: string }[]).map((r) => [r.id, { error: r.error, at: r.at }])),
  };
}
