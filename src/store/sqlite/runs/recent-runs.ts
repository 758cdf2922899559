// The runs accepted lately, as `find` returns them: a poll most often reads a run just started.
// This process is the only writer of its file's runs (the serve lock), and every write changes the
// entry with the row inside its transaction (a group that fails to commit clears them all), so an
// entry is always the committed row; older runs are read from the table. Entries are replaced,
// never changed in place.
import type { RunRow } from '../../port';
import { BudgetedMap } from '../../shared/budgeted-map';
import type { GroupCommit } from '../group-commit';

/** The memory the runs accepted lately may take for their polls, at most (about: see `sizeOf`). */
export const RECENT_RUNS_BYTES = 2 * 1024 * 1024;
/** What a run's row takes besides its JSON texts: the object, its ids, stamps and numbers. */
const ROW_OVERHEAD_BYTES = 512;

const sizeOf = (row: RunRow) => ROW_OVERHEAD_BYTES + row.request.length + row.state.length + (row.snapshot?.length ?? 0) + (row.error?.length ?? 0);

export class RecentRuns {
  private readonly rows = new BudgetedMap<string, RunRow>(RECENT_RUNS_BYTES, sizeOf);

  constructor(commit: GroupCommit) {
    commit.onRollback(() => this.rows.clear());
  }

  get(id: string): RunRow | undefined {
    return this.rows.get(id);
  }

  /** A new run goes last; a changed one keeps its place. */
  keep(row: RunRow): void {
    this.rows.set(row.id, row);
  }

  /** Changes the held row of run `id`, if one is held, as `change` says. */
  amend(id: string, change: (row: RunRow) => Partial<RunRow>): void {
    const row = this.rows.get(id);
    if (row) this.keep({ ...row, ...change(row) });
  }

  delete(id: string): void {
    this.rows.delete(id);
  }
}
