// The outbox's move to one table (SQLite 027, PostgreSQL 020): deliveries written before it keep
// their event's id and body, what waited is still claimable, and events written after it have
// time-ordered ids and carry their body in the delivery. Then SQLite's deliveries keyed by their
// endpoint and id (028): every row kept, the id's own index gone, the intake trigger still writing.
// Then each subject's event number on its own row (029): the numbers carried over, one index of
// what waits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../../src/store/sqlite/database';
import { migratePg } from '../../src/store/postgres/migrate';
import { migrationsDir, pgMigrationsDir } from '../../src/paths';
import { openSqlite, type SqliteDatabase, type SqliteStatement } from '../../src/sqlite-driver';
import { createPgDatabase } from '../helpers/database';
import { openPgDatabase } from './adapters';

/** A copy of `dir` with the migrations numbered below `version` only. */
function migrationsBefore(dir: string, version: number): string {
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'build-outbox-migrations-'));
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.sql') && Number(f.slice(0, 3)) < version)) {
    fs.copyFileSync(path.join(dir, file), path.join(before, file));
  }
  return before;
}

const ENDPOINT_COLUMNS = 'id, workspace_id, url, event_types, description, status, all_spaces, teams, secret_sealed, secret_prefix, created_at, stamp_us';
const TIME_ORDERED_EVENT_ID = /^evt_[0-9a-f]{32}$/;

/**
 * A SQLite file migrated to just below `version`, with one endpoint of workspace `ws` subscribed to
 * every type; `check` gets it, the statement that hands in a `run.finished` event of a subject, and
 * a way to migrate it up to a version. Everything is removed afterwards.
 */
function withSqliteOutboxBefore(version: number, check: (db: SqliteDatabase, intake: SqliteStatement, migrateTo: (version: number) => number[]) => void): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-outbox-sqlite-'));
  const db = openSqlite(path.join(dir, 'build.db'));
  const migrateTo = (to: number) => {
    const through = migrationsBefore(migrationsDir, to + 1);
    try {
      return migrate(db, through);
    } finally {
      fs.rmSync(through, { recursive: true, force: true });
    }
  };
  try {
    db.pragma('foreign_keys = ON');
    migrateTo(version - 1);
    db.prepare(
      `INSERT INTO event_endpoints (${ENDPOINT_COLUMNS}) VALUES ('e1', 'ws', 'https://r.example', '["*"]', NULL, 'enabled', 0, '[]', 's', 'p', 'now', 1)`,
    ).run();
    db.prepare("INSERT INTO event_subscriptions (workspace_id, event_type, endpoint_id) VALUES ('ws', '*', 'e1')").run();
    const intake = db.prepare(
      "INSERT INTO event_intake (workspace_id, type, subject, team, data) VALUES ('ws', 'run.finished', ?, NULL, '{\"run_id\":\"r1\"}')",
    );
    check(db, intake, migrateTo);
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('SQLite: migration 027 keeps each delivery with its event body; later events carry theirs', () => {
  withSqliteOutboxBefore(27, (db, intake, migrateTo) => {
    intake.run('run:r1');
    const old = db.prepare('SELECT d.id, d.event_id, e.body FROM event_deliveries AS d JOIN events AS e ON e.id = d.event_id').get() as Record<string, string>;

    expect(migrateTo(27)).toEqual([27]);
    expect(db.prepare('SELECT id, event_id, body, status FROM event_deliveries').all()).toEqual([{ ...old, status: 'pending' }]);
    expect(db.prepare("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'events'").pluck().get()).toBe(0);
    intake.run('run:r1');
    const later = db.prepare('SELECT event_id, body, created_ms FROM event_deliveries WHERE id <> ?').get(old.id) as Record<string, string | number>;
    expect(later.event_id).toMatch(TIME_ORDERED_EVENT_ID);
    expect(String(later.event_id).slice(4, 16)).toBe(Number(later.created_ms).toString(16).padStart(12, '0'));
    expect(JSON.parse(String(later.body))).toMatchObject({ type: 'run.finished', data: { run_id: 'r1', sequence: 2 } });
  });
});

test('SQLite: migration 028 keys the deliveries by endpoint and id, and keeps every one', () => {
  withSqliteOutboxBefore(28, (db, intake, migrateTo) => {
    intake.run('run:r1');
    intake.run('run:r1');
    db.prepare("UPDATE event_deliveries SET status = 'succeeded', finished_ms = 1, log = '[{\"status_code\":204}]' WHERE rowid = 1").run();
    const rows = () => db.prepare('SELECT * FROM event_deliveries ORDER BY rowid').all();
    const old = rows();

    expect(migrateTo(28)).toEqual([28]);
    expect(rows()).toEqual(old);
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'event_deliveries' ORDER BY name").pluck().all()).toEqual([
      'event_deliveries_busy',
      'event_deliveries_finished',
      'event_deliveries_queue',
      'sqlite_autoindex_event_deliveries_1',
    ]);
    expect(db.prepare("SELECT name FROM pragma_index_info('sqlite_autoindex_event_deliveries_1') ORDER BY seqno").pluck().all()).toEqual(['endpoint_id', 'id']);
    intake.run('run:r1');
    expect(db.prepare("SELECT json_extract(body, '$.data.sequence') FROM event_deliveries ORDER BY rowid").pluck().all()).toEqual([1, 2, 3]);
    expect(db.pragma('legacy_alter_table', { simple: true })).toBe(0);
    expect(db.pragma('foreign_key_check')).toEqual([]);
  });
});

test("SQLite: migration 029 moves each subject's event number onto its row, and indexes what waits once", () => {
  withSqliteOutboxBefore(29, (db, intake, migrateTo) => {
    intake.run('endpoint:e1');
    intake.run('endpoint:e1');
    db.prepare("INSERT INTO event_sequences (subject, seq) VALUES ('run:gone', 7)").run();
    // One subject of each other kind, with a number of its own (replacing what the triggers of 026 gave it).
    db.exec(`
      INSERT INTO agents (id, workspace_id, slug, name, status, version, stamp_us, created_at) VALUES ('a1', 'ws', 'a', 'A', 'active', 1, 1, 'now');
      INSERT INTO workflows (id, workspace_id, slug, name, enabled, version, stamp_us, created_at) VALUES ('w1', 'ws', 'w', 'W', 1, 1, 1, 'now');
      INSERT INTO evals (id, workspace_id, agent_id, status, created_at, item, plan, held) VALUES ('v1', 'ws', 'a1', 'queued', 'now', '{}', '{}', 0);
      INSERT INTO channel_messages (id, workspace_id, agent_id, channel, direction, status, from_address, to_addresses, preview, dedupe_key, contact, created_at)
        VALUES ('m1', 'ws', 'a1', 'email', 'received', 'received', 'f', '[]', 'p', 'k', 'c', 'now');
      INSERT OR REPLACE INTO event_sequences (subject, seq) VALUES ('agent:a1', 3), ('workflow:w1', 4), ('eval:v1', 5), ('message:m1', 6);`);
    // The run's start and its end: numbered 1 and 2 by the triggers of 026.
    db.prepare(
      `INSERT INTO runs (id, kind, workspace_id, started_by, target_id, target_version, status, source, accepted_at, request, state, snapshot)
       VALUES ('r9', 'workflow', 'ws', 'u', 'w1', 1, 'running', 'test', 'now', '{}', '{}', '{}')`,
    ).run();
    db.prepare("UPDATE runs SET status = 'succeeded' WHERE id = 'r9'").run();
    expect(db.prepare("SELECT seq FROM event_sequences WHERE subject = 'run:r9'").pluck().get()).toBe(2);
    db.prepare("UPDATE event_deliveries SET status = 'delivering', next_attempt_ms = 9e12 WHERE rowid = 1").run();
    const rows = () => db.prepare('SELECT * FROM event_deliveries ORDER BY rowid').all();
    const old = rows();

    expect(migrateTo(29)).toEqual([29]);
    expect(rows()).toEqual(old);
    expect(db.prepare("SELECT event_seq FROM event_endpoints WHERE id = 'e1'").pluck().get()).toBe(2);
    expect(db.prepare("SELECT event_seq FROM runs WHERE id = 'r9'").pluck().get()).toBe(2);
    const carried = ['agents', 'workflows', 'evals', 'channel_messages'].map((table) => db.prepare(`SELECT event_seq FROM ${table}`).pluck().all());
    expect(carried).toEqual([[3], [4], [5], [6]]);
    expect(db.prepare("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'event_sequences' OR name LIKE '%sequence_gone'").pluck().get()).toBe(0);
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'event_deliveries' ORDER BY name").pluck().all()).toEqual([
      'event_deliveries_finished',
      'event_deliveries_waiting',
      'sqlite_autoindex_event_deliveries_1',
    ]);
    for (const table of ['runs', 'agents', 'workflows', 'evals', 'channel_messages', 'event_endpoints']) {
      expect(db.prepare(`SELECT COUNT(*) FROM pragma_table_info('${table}') WHERE name = 'event_seq'`).pluck().get()).toBe(1);
    }
    db.prepare("UPDATE runs SET status = 'running' WHERE id = 'r9'").run();
    expect(db.prepare("SELECT event_seq FROM runs WHERE id = 'r9'").pluck().get()).toBe(3);
    const started = db.prepare("SELECT body FROM event_deliveries WHERE event_type = 'run.started' ORDER BY rowid DESC LIMIT 1").pluck().get() as string;
    expect(JSON.parse(started)).toMatchObject({ type: 'run.started', data: { run_id: 'r9', status: 'running', sequence: 3 } });
    // The intake now takes the event numbered; it writes the body as json_object would.
    db.prepare(
      "INSERT INTO event_intake (workspace_id, type, team, data) VALUES ('ws', 'run.finished', NULL, json_object('run_id', 'r1', 'sequence', 3))",
    ).run();
    const body = db.prepare('SELECT body FROM event_deliveries ORDER BY rowid DESC LIMIT 1').pluck().get() as string;
    const { timestamp } = JSON.parse(body) as { timestamp: string };
    expect(body).toBe(
      db.prepare("SELECT json_object('type', 'run.finished', 'timestamp', ?, 'data', json_object('run_id', 'r1', 'sequence', 3))").pluck().get(timestamp),
    );
    expect(db.pragma('foreign_key_check')).toEqual([]);
  });
});

test('PostgreSQL: migration 020 keeps each delivery with its event body; later events carry theirs', async () => {
  const database = await createPgDatabase();
  const db = openPgDatabase(database.url, { max: 1 });
  const before = migrationsBefore(pgMigrationsDir, 20);
  try {
    await migratePg(db, before);
    await db.count(
      `INSERT INTO event_endpoints (${ENDPOINT_COLUMNS}) VALUES ('e1', 'ws', 'https://r.example', '["*"]', NULL, 'enabled', 0, '[]', 's', 'p', 'now', 1)`,
    );
    await db.count("INSERT INTO event_subscriptions (workspace_id, event_type, endpoint_id) VALUES ('ws', '*', 'e1')");
    const record = () => db.count(`SELECT record_event('ws', 'run.finished', 'run:r1', NULL, '{"run_id":"r1"}'::jsonb)`);
    await record();
    const old = await db.row<Record<string, string>>('SELECT d.id, d.event_id, e.body FROM event_deliveries AS d JOIN events AS e ON e.id = d.event_id');

    expect(await migratePg(db)).toEqual([20]);
    expect(await db.rows('SELECT id, event_id, body, status FROM event_deliveries')).toEqual([{ ...old, status: 'pending' }]);
    expect(await db.row("SELECT to_regclass('events') AS events")).toEqual({ events: null });
    await record();
    const later = (await db.row<Record<string, string>>('SELECT event_id, body, created_ms FROM event_deliveries WHERE id <> $1', [old!.id]))!;
    expect(later.event_id).toMatch(TIME_ORDERED_EVENT_ID);
    expect(later.event_id!.slice(4, 16)).toBe(Number(later.created_ms).toString(16).padStart(12, '0'));
    expect(JSON.parse(later.body!)).toMatchObject({ type: 'run.finished', data: { run_id: 'r1', sequence: 2 } });
  } finally {
    await db.close();
    await database.drop();
    fs.rmSync(before, { recursive: true, force: true });
  }
});
