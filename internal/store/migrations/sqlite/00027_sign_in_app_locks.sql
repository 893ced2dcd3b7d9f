-- +goose Up
-- Nothing changes on SQLite: a foreign key check there takes no row lock
-- (its one writer holds the database), so the challenges' and sessions'
-- keys to apps cost nothing under concurrency. (PostgreSQL drops them; see
-- its 00027.)
SELECT 1;

-- +goose Down
SELECT 1;
