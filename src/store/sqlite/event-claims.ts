// Which due deliveries a claim takes, on SQLite: the endpoints with deliveries waiting, visited in
// id order from where the last claim stopped (round robin), each giving up to its room
// (`perEndpoint` less its attempts under way), its oldest first; then the endpoints take turns.
// Every step is an index seek or a range read bounded by the room, so a claim costs at most
// CLAIM_VISITS endpoints' worth whatever the backlog: the single query it replaces ranked every due
// delivery, and one endpoint's 100,000 waiting ones cost each tick 400 ms (docs/benchmarks.md).
import { CLAIM_VISITS } from '../shared/event-endpoints';
import type { Db } from './database';

/** The rowids a claim would take now, in the order the endpoints take turns (reads only: the caller marks them, conditionally). */
export function dueDeliveryPicker(db: Db): (nowMs: number, limit: number, perEndpoint: number) => number[] {
  const nextEndpoint = db
    .prepare("SELECT endpoint_id FROM event_deliveries WHERE status IN ('pending', 'delivering') AND endpoint_id > ? ORDER BY endpoint_id LIMIT 1")
    .pluck();
  // Each statement repeats the waiting index's condition (`status IN …`) so SQLite may use it. The
  // attempts under way are the range of leases not lapsed: at most perEndpoint per process.
  const underWay = db
    .prepare(
      `SELECT COUNT(*) FROM event_deliveries
       WHERE endpoint_id = ? AND status IN ('pending', 'delivering') AND status = 'delivering' AND next_attempt_ms > ?`,
    )
    .pluck();
  // An enabled endpoint's oldest due deliveries, up to its room, read from the index alone (rowids,
  // not ids: the delivery's id is in its row). Each row read costs: the room is counted first. The
  // pending ones and the lapsed claims are two ranges of the index, each read up to the room, then
  // merged by due time (one range over both statuses would sort every due row).
  const dueRange = (status: 'pending' | 'delivering') =>
    `SELECT rowid, next_attempt_ms FROM event_deliveries
     WHERE endpoint_id = @endpoint AND status IN ('pending', 'delivering') AND status = '${status}' AND next_attempt_ms <= @now
       AND EXISTS (SELECT 1 FROM event_endpoints WHERE id = @endpoint AND status = 'enabled')
     ORDER BY next_attempt_ms LIMIT CAST(@room AS INTEGER)`;
  const oldestDue = db
    .prepare(
      `SELECT * FROM (${dueRange('pending')}) UNION ALL SELECT * FROM (${dueRange('delivering')})
       ORDER BY next_attempt_ms LIMIT CAST(@room AS INTEGER)`,
    )
    .raw();
  /** Where the next claim starts: after the last endpoint visited, or from the first once every one was. */
  let cursor = '';

  return (now, limit, perEndpoint) => {
    const picks: { id: number; due: number; turn: number }[] = [];
    const start = cursor;
    let after = start;
    let wrapped = start === '';
    let visits = 0;
    let serving = 0;
    cursor = '';
    for (;;) {
      if (visits === CLAIM_VISITS || serving === limit) {
        cursor = after; // stopped early: the next claim goes on from here
        break;
      }
      const endpoint = nextEndpoint.get(after) as string | undefined;
      if (endpoint === undefined || (wrapped && start !== '' && endpoint > start)) {
        if (wrapped) break;
        wrapped = true;
        after = '';
        continue;
      }
      visits++;
      after = endpoint;
      const room = perEndpoint - (underWay.get(endpoint, now) as number);
      if (room <= 0) continue;
      const due = oldestDue.all({ endpoint, now, room }) as [number, number][];
      if (due.length) serving++;
      for (const [turn, [id, dueMs]] of due.entries()) picks.push({ id, due: dueMs, turn });
    }
    picks.sort((a, b) => a.turn - b.turn || a.due - b.due);
    return picks.slice(0, limit).map((p) => p.id);
  };
}
