// The SQLite driver is chosen by the running Node: better-sqlite3 13 (Node-API) on 22 and later,
// where 12 aborts the process on Node 24; 12 on Node 20, which 13 does not support.
import { openSqlite, sqliteDriverFor } from '../../src/sqlite-driver';

test.each([
  ['20.19.0', 'better-sqlite3'],
  ['20.20.2', 'better-sqlite3'],
  ['22.12.0', 'better-sqlite3-13'],
  ['22.23.3', 'better-sqlite3-13'],
  ['24.21.0', 'better-sqlite3-13'],
  ['26.0.0', 'better-sqlite3-13'],
])('Node %s loads %s', (node, module) => {
  expect(sqliteDriverFor(node).module).toBe(module);
});

test('the driver the running Node gets is installed in the major chosen for it, and works', () => {
  const driver = sqliteDriverFor(process.versions.node);
  const { version } = require(`${driver.module}/package.json`) as { version: string };
  expect(Number.parseInt(version, 10)).toBe(driver.module === 'better-sqlite3-13' ? 13 : 12);
  const db = openSqlite(':memory:');
  try {
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
    db.transaction(() => {
      for (const body of ['a', 'b']) insert.run(body);
    })();
    expect(db.prepare('SELECT body FROM t ORDER BY id').pluck().all()).toEqual(['a', 'b']);
  } finally {
    db.close();
  }
});
