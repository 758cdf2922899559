// The app_event triggers' listeners and the kv app's pending events on PostgreSQL: any replica
// claims pending events, each by one replica at a time (SKIP LOCKED, then the lease).
import type { AppEventRepository, EventListener, PendingAppEvent } from '../port';
import type { PgDatabase } from './database';
import { holdsNul } from './documents';
import { bumpAgentStatus } from './trigger-status';

export function pgAppEventRepository(db: PgDatabase): AppEventRepository {
  return {
    listeners: async (ws, app, connection) => {
      if (connection === undefined) {
        return db.rows<EventListener>('SELECT id AS "triggerId", agent_id AS "agentId" FROM agent_triggers WHERE workspace_id = $1 AND event_app = $2', [
          ws,
          app,
        ]);
      }
      if (holdsNul(connection)) return [];
      return db.rows<EventListener>(
        'SELECT id AS "triggerId", agent_id AS "agentId" FROM agent_triggers WHERE workspace_id = $1 AND event_app = $2 AND event_connection = $3',
        [ws, app, connection],
      );
    },
    claimPending: (now, until, limit) =>
      db.rows<PendingAppEvent>(
        `UPDATE app_events_pending SET claimed_until_ms = $2
         WHERE id IN (SELECT id FROM app_events_pending WHERE claimed_until_ms <= $1 ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING id, workspace_id AS "workspaceId", app, event, payload, chain, created_at AS "createdAt"`,
        [now, until, limit],
      ),
    finishPending: async (id) => {
      await db.count('DELETE FROM app_events_pending WHERE id = $1', [id]);
    },
    recordError: (agentId, triggerId, error, at) =>
      db.transaction(async (sql) => {
        const set = 'UPDATE agent_triggers SET last_error = $1, last_error_at = $2 WHERE id = $3 AND agent_id = $4';
        if ((await sql.count(set, [error, at, triggerId, agentId])) === 1) await bumpAgentStatus(sql, agentId);
      }),
    errors: async (agentId) => {
      const rows = await db.rows<{ id: string; error: string; at: string }>(
        'SELECT id, last_error AS error, last_error_at AS at FROM agent_triggers WHERE agent_id = $1 AND last_error IS NOT NULL',
        [agentId],
      );
      return new Map(rows.map((r) => [r.id, { error: r.error, at: r.at }]));
    },
  };
}
