-- +goose Up
-- A queued e-mail with its HTML part is 4 to 6 KB, over the 2 KB at which
-- PostgreSQL moves a row's large values out of line: every message cost
-- two TOAST rows and their index entries to insert, and to delete once
-- sent, and a compression attempt that sealed (random-looking) bytes never
-- pass. Rows up to a page stay whole, and a larger message goes out of
-- line as is.
ALTER TABLE queued_messages SET (toast_tuple_target = 8160);
ALTER TABLE queued_messages ALTER COLUMN sealed SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE queued_messages ALTER COLUMN sealed SET STORAGE EXTENDED;
ALTER TABLE queued_messages RESET (toast_tuple_target);
