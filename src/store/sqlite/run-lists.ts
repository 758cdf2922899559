// Run lists on SQLite: the shared query (shared/run-lists.ts), each item built as the JSON the API
// shows by json_object, and each distinct statement prepared once (see docs/benchmarks.md for why
// the items are built in SQL).
import type { RunListQuery, RunListRow } from '../port';
import { runListStatement } from '../shared/run-lists';
import type { Db } from './database';

const SQLITE_JSON = { object: (members: string) => `json_object(${members})`, text: (json: string) => json };

export function runLists(db: Db) {
  const prepared = new Map<string, ReturnType<Db['prepare']>>();
  return (q: RunListQuery): RunListRow[] => {
    const { sql, params } = runListStatement(q, SQLITE_JSON);
    let statement = prepared.get(sql);
    if (!statement) prepared.set(sql, (statement = db.prepare(sql)));
    return statement.all(params) as RunListRow[];
  };
}
