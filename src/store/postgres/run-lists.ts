// Run lists on PostgreSQL: the shared query (shared/run-lists.ts), each item built by the server
// (json_build_object keeps the members in the order written, as the item's schema lists them).
import type { RunListQuery, RunListRow } from '../port';
import { runListStatement } from '../shared/run-lists';
import { numbered, type NumberedStatement } from '../shared/statements';
import type { Sql } from './database';

const PG_JSON = { object: (members: string) => `json_build_object(${members})`, text: (json: string) => `${json}::text` };

/** The id as runs_listed orders it (migrations/004: byte-wise, as the id's own collation, but only that index gives this order). */
const LISTED_KEY = 'id COLLATE "POSIX"';

// Each distinct statement numbered once: at most as many as the shapes runListStatement makes.
const numberedOnce = new Map<string, NumberedStatement>();

/** The page's statement as PostgreSQL is sent it: its text and its values. */
export function pgRunListStatement(q: RunListQuery): { text: string; values: unknown[] } {
  const statement = runListStatement(q, PG_JSON, LISTED_KEY, 'bound');
  let pg = numberedOnce.get(statement.sql);
  if (!pg) numberedOnce.set(statement.sql, (pg = numbered(statement.sql)));
  return { text: pg.text, values: pg.values(statement.params) };
}

export function pgRunLists(sql: Sql) {
  return (q: RunListQuery): Promise<RunListRow[]> => {
    const { text, values } = pgRunListStatement(q);
    // Prepared, with the limit a parameter: a shape is one statement whatever the limit, so a caller
    // cannot fill the connections' plan caches with them; its one plan reads runs_listed, which a case
    // checks. (Prepared, a page costs some 12 % less service CPU than planned for its values each
    // time: issue 25, docs/benchmarks.md.)
    return sql.rows<RunListRow>(text, values);
  };
}
