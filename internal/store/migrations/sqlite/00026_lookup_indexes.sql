-- +goose Up
-- Nothing changes on SQLite: its planner takes the UNIQUE (app_id, email)
-- and (app_id, phone) indexes for a lookup by address, statistics or not.
-- (PostgreSQL's unique indexes now lead with the address; see its 00026.)
SELECT 1;

-- +goose Down
SELECT 1;
