-- Projection builds fill their tables without secondary indexes, which is
-- several times faster, and make the indexes once they have caught up with
-- the log; this records that they have.

-- +goose Up
ALTER TABLE projection_checkpoints ADD COLUMN indexed boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE projection_checkpoints DROP COLUMN indexed;
