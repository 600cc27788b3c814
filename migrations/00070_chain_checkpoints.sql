-- Checkpoints of the event log's hash chains, kept apart from the events so
-- that removing events shows: a stream's last events, or the tail of the
-- whole log, leave no broken link behind them, but a checkpoint remembers
-- the head each stream had and how many events the log held.
--
-- A checkpoint records the log's extent (the cursor it reaches and the
-- number of events up to it) and, in chain_checkpoint_heads, the head
-- (version and hash) of every stream that changed since the previous one;
-- a stream's head as of a checkpoint is its latest row at or before it.
-- Both tables are append-only, like the log itself.
-- Not reversible: dropping them would throw tamper evidence away.

-- +goose Up
CREATE TABLE chain_checkpoints (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    taken_at         timestamptz NOT NULL DEFAULT now(),
    through_tx       xid8        NOT NULL,
    through_position bigint      NOT NULL,
    events           bigint      NOT NULL CHECK (events >= 0),
    streams          bigint      NOT NULL CHECK (streams >= 0)
);

CREATE TABLE chain_checkpoint_heads (
    checkpoint_id bigint  NOT NULL REFERENCES chain_checkpoints (id),
    stream_id     text    NOT NULL,
    version       integer NOT NULL CHECK (version >= 1),
    hash          bytea   NOT NULL,
    PRIMARY KEY (stream_id, checkpoint_id)
);

CREATE TRIGGER chain_checkpoints_append_only BEFORE UPDATE OR DELETE ON chain_checkpoints
    FOR EACH ROW EXECUTE FUNCTION cairn_refuse_change();
CREATE TRIGGER chain_checkpoints_no_truncate BEFORE TRUNCATE ON chain_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_refuse_change();
CREATE TRIGGER chain_checkpoint_heads_append_only BEFORE UPDATE OR DELETE ON chain_checkpoint_heads
    FOR EACH ROW EXECUTE FUNCTION cairn_refuse_change();
CREATE TRIGGER chain_checkpoint_heads_no_truncate BEFORE TRUNCATE ON chain_checkpoint_heads
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_refuse_change();

REVOKE ALL ON chain_checkpoints, chain_checkpoint_heads FROM PUBLIC;
GRANT SELECT, INSERT ON chain_checkpoints, chain_checkpoint_heads TO cairn_app;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
  RAISE EXCEPTION 'migration 70 (chain checkpoints) is not reversible: it would throw tamper evidence away';
END
$$;
-- +goose StatementEnd
