-- Each workspace's balance, for operators and tools reading the database: on SQLite the workspace's
-- row holds it whole; PostgreSQL spreads it over rows and sums them in a view of the same name
-- (postgres/migrations/009).
CREATE VIEW workspace_balances AS SELECT id, credits FROM workspaces;
