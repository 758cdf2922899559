-- A workspace's credits, spread over rows (issue 25; postgres/credits.ts): besides the part in
-- workspaces.credits, up to eight slots each hold part of the balance. A run's acceptance debits one
-- slot, so acceptances of one workspace, each holding what it debited until its commit is flushed,
-- wait for each other only when they pick the same slot. A slot that cannot cover a debit sends it
-- to the exact path, which locks the workspace's row and then every slot, debits the total and
-- spreads what is left over the slots again. The balance is the sum: workspace_balances.
CREATE TABLE workspace_credit_slots (
  workspace_id  text COLLATE "C" NOT NULL,
  slot          smallint NOT NULL,
  credits       bigint NOT NULL CHECK (credits >= 0),
  PRIMARY KEY (workspace_id, slot)
);

-- Each workspace's balance, for operators and tools reading the database (SQLite has the same view).
CREATE VIEW workspace_balances AS
  SELECT w.id, w.credits + COALESCE((SELECT SUM(s.credits) FROM workspace_credit_slots AS s WHERE s.workspace_id = w.id), 0)::bigint AS credits
  FROM workspaces AS w;
