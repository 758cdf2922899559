// What the SQLite run repository's roles share: the database and its group commit, the credit
// statements, the run's events, the recent runs held for polls, and the announcement of new events.
// Credits are reserved when a run is accepted (its minimum cost) and charged as it spends; whatever
// was reserved and not spent goes back when it ends. Every debit is one conditional UPDATE, so a
// balance never goes below zero, whatever the concurrency.
import type { RunRow } from '../../port';
import type { Db } from '../database';
import type { GroupCommit } from '../group-commit';
import { runEventWrites, type RunEventWrites } from '../run-events';
import { RecentRuns } from './recent-runs';

export type RunCredits = Pick<RunRow, 'workspace_id' | 'credits_reserved'>;

export interface RunContext {
  db: Db;
  commit: GroupCommit;
  events: RunEventWrites;
  recent: RecentRuns;
  /** The one debit of a balance: conditional, so it never goes below zero. */
  debit(workspace: string, amount: number): boolean;
  /** Returns `amount` (when above zero) to the workspace's balance. */
  credit(workspace: string, amount: number): void;
  /** What a run's credit writes need of it (not its snapshot, the whole document). */
  creditsOf(id: string): RunCredits | undefined;
  /** Tells the listeners that run `id` has new events (call after their write committed). */
  announce(id: string): void;
  /** Announces run `id` once `write` (which added events to it) committed. */
  announcing<T>(id: string, write: Promise<T>): Promise<T>;
  onEvents(listener: (runId: string) => void): void;
}

export function runContext(db: Db, commit: GroupCommit): RunContext {
  const debit = db.prepare('UPDATE workspaces SET credits = credits - @amount WHERE id = @workspace AND credits >= @amount');
  const credit = db.prepare('UPDATE workspaces SET credits = credits + @amount WHERE id = @workspace');
  const creditsOf = db.prepare('SELECT workspace_id, credits_reserved FROM runs WHERE id = ?');
  const listeners: ((runId: string) => void)[] = [];
  const announce = (id: string) => {
    for (const listener of listeners) listener(id);
  };
  return {
    db,
    commit,
    events: runEventWrites(db),
    recent: new RecentRuns(commit),
    debit: (workspace, amount) => debit.run({ amount, workspace }).changes === 1,
    credit: (workspace, amount) => {
      if (amount > 0) credit.run({ amount, workspace });
    },
    creditsOf: (id) => creditsOf.get(id) as RunCredits | undefined,
    announce,
    announcing: (id, write) =>
      write.then((value) => {
        announce(id);
        return value;
      }),
    onEvents: (listener) => void listeners.push(listener),
  };
}
