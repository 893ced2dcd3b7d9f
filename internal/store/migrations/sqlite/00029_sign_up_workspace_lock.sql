-- +goose Up
-- Nothing changes on SQLite: a foreign key check there takes no row lock
-- (its one writer holds the database), so the people's key to workspaces
-- costs nothing under concurrency. (PostgreSQL drops it; see its 00029.)
SELECT 1;

-- +goose Down
SELECT 1;
