-- +goose Up
-- Nothing changes on SQLite (PostgreSQL's unique keys on mostly-NULL
-- columns now hold only the rows with a value; see its 00028).
SELECT 1;

-- +goose Down
SELECT 1;
