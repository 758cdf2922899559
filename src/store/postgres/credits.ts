// A workspace's credits on PostgreSQL: the balance is workspaces.credits plus the credits of its
// slots (migration 009). A debit takes one slot, chosen at random, by a conditional UPDATE: the
// acceptances of one workspace, each holding the row it debited until its commit is flushed, wait
// for each other only when they pick the same slot, where one row made them commit one per flush.
// A slot that cannot cover a debit (or none yet) sends it to the exact path: the workspace's row,
// then every slot in order, locked; the debit from their sum, never below zero; what is left spread
// over the slots again. Refunds go to the workspace's row.
//
// Locks are taken in one order (a run's row, the workspace's row, its slots by number), and a
// writer holding one slot waits for nothing else of the workspace. One subtlety keeps that true: a
// slot UPDATE that waited for another writer's commit and then found the slot too low still holds
// the slot's row (PostgreSQL locks the version it rechecks). Within a transaction, taking the exact
// path then would wait for the workspace's row while holding that slot, and a writer of the exact
// path holding the row waits for the slot: a deadlock. So a transaction whose slot fell short is
// given up (every lock released) and run again with the exact debit (withDebit).
import type { Sql } from './database';

/** The slots a workspace's credits are spread over. */
const CREDIT_SLOTS = 8;

/** A slot to debit, at random: concurrent debits of one workspace mostly take different rows. */
export const randomSlot = (): number => Math.floor(Math.random() * CREDIT_SLOTS);

/** A debit of one slot, its parameters named by the caller: the amount from the slot if it covers it; the workspace's id, or no row. */
export const debitSlotSql = (p: { amount: string; workspace: string; slot: string }) =>
  `UPDATE workspace_credit_slots SET credits = credits - ${p.amount} WHERE workspace_id = ${p.workspace} AND slot = ${p.slot} AND credits >= ${p.amount} RETURNING workspace_id AS id`;

/** A workspace's balance ($1: its id): its row's credits and its slots'. */
export const BALANCE = 'SELECT credits FROM workspace_balances WHERE id = $1';

/** What is left ($2) spread over the slots, the workspace's row emptied (both locked by the caller). */
const SPREAD = `WITH emptied AS (UPDATE workspaces SET credits = 0 WHERE id = $1)
  INSERT INTO workspace_credit_slots (workspace_id, slot, credits)
  SELECT $1, s::smallint, $2::bigint / $3::integer + CASE WHEN s < $2::bigint % $3::integer THEN 1 ELSE 0 END
  FROM generate_series(0, $3::integer - 1) AS s
  ON CONFLICT (workspace_id, slot) DO UPDATE SET credits = excluded.credits`;

const DEBIT_SLOT = debitSlotSql({ amount: '$1', workspace: '$2', slot: '$3' });

/** Debits `amount` from one slot chosen at random, if it covers it. */
const debitSlot = async (sql: Sql, workspace: string, amount: number): Promise<boolean> =>
  (await sql.count(DEBIT_SLOT, [amount, workspace, randomSlot()])) === 1;

/** A debit inside the caller's transaction: true when it took `amount`, false when the balance cannot cover it. */
export type Debit = (sql: Sql, workspace: string, amount: number) => Promise<boolean>;

/** The exact path (inside the caller's transaction): the whole balance locked, debited if it covers `amount`, the rest spread. */
const debitExactly: Debit = async (sql, workspace, amount) => {
  const row = await sql.row<{ credits: number }>('SELECT credits FROM workspaces WHERE id = $1 FOR UPDATE', [workspace]);
  if (!row) return false;
  const slots = await sql.rows<{ credits: number }>('SELECT credits FROM workspace_credit_slots WHERE workspace_id = $1 ORDER BY slot FOR UPDATE', [workspace]);
  const total = slots.reduce((sum, slot) => sum + slot.credits, row.credits);
  if (total < amount) return false;
  await sql.count(SPREAD, [workspace, total - amount, CREDIT_SLOTS]);
  return true;
};

/** A slot debit that fell short inside a transaction: the transaction is given up. */
class SlotShort extends Error {}

const slotOrGiveUp: Debit = async (sql, workspace, amount) => {
  if (await debitSlot(sql, workspace, amount)) return true;
  throw new SlotShort('the slot cannot cover the debit');
};

/**
 * Runs `transaction` (a whole transaction, given the debit it makes) with a debit of one slot; when
 * that slot falls short, runs it again from nothing with the exact debit. Never below zero, whatever
 * the concurrency (every write is conditional, or made under the locks of the whole balance), and
 * no deadlock (see above).
 */
export async function withDebit<T>(transaction: (debit: Debit) => Promise<T>): Promise<T> {
  try {
    return await transaction(slotOrGiveUp);
  } catch (err) {
    if (err instanceof SlotShort) return transaction(debitExactly);
    throw err;
  }
}

/** Returns `amount` (when above zero) to the workspace's balance. */
export const credit = async (sql: Sql, workspace: string, amount: number): Promise<void> => {
  if (amount > 0) await sql.count('UPDATE workspaces SET credits = credits + $1 WHERE id = $2', [amount, workspace]);
};

/** Sets the balance to `amount` (inside the caller's transaction): the workspace's row holds it, its slots nothing. */
export async function setBalance(sql: Sql, workspace: string, amount: number): Promise<void> {
  await sql.count(`INSERT INTO workspaces (id, credits, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET credits = excluded.credits`, [
    workspace,
    amount,
    new Date().toISOString(),
  ]);
  await sql.count('UPDATE workspace_credit_slots SET credits = 0 WHERE workspace_id = $1', [workspace]);
}
