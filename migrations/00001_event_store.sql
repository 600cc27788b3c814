-- The event log: every change in Cairn is one row here, never updated or deleted.
-- Not reversible: dropping the log would destroy the system of record, so the
-- Down section refuses.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
  -- Roles are cluster-wide, so several Cairn databases in one cluster share them.
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cairn_app') THEN
    CREATE ROLE cairn_app NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object THEN
  -- Another database of the same cluster created it concurrently: same outcome.
  RAISE NOTICE 'role cairn_app already exists';
END
$$;
-- +goose StatementEnd

CREATE TABLE events (
    position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The writing transaction: readers in global order only read below the
    -- oldest transaction still running, so a late commit is never skipped.
    tx_id           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    stream_id       text        NOT NULL,
    stream_type     text        NOT NULL,
    version         integer     NOT NULL CHECK (version >= 1),
    event_type      text        NOT NULL,
    schema_version  integer     NOT NULL CHECK (schema_version >= 1),
    -- json, not jsonb: the exact bytes are kept so their hash can be re-checked.
    payload         json        NOT NULL,
    metadata        json        NOT NULL,
    -- Idempotency: a command's events are numbered 0..n-1; the unique index on
    -- (command_id, command_seq) refuses a second append of the same command.
    command_id      text,
    command_seq     integer,
    -- Copies of metadata fields the event history is filtered by, as plain
    -- columns so indexing them needs no JSON parsing on every append.
    -- Verify checks that they match the (hashed) metadata.
    actor           text,
    tenant          text,
    correlation_id  text,
    recorded_at     timestamptz NOT NULL,
    prev_hash       bytea       NOT NULL,
    hash            bytea       NOT NULL,
    CONSTRAINT events_stream_version UNIQUE (stream_id, version)
);

CREATE INDEX events_global_order ON events (tx_id, position);
CREATE UNIQUE INDEX events_command ON events (command_id, command_seq);

-- Checkpoints owned by subscribers (process managers, consumer groups).
CREATE TABLE subscription_checkpoints (
    name        text        PRIMARY KEY,
    tx_id       xid8        NOT NULL,
    position    bigint      NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE FUNCTION cairn_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% on % refused: the event log is append-only', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION cairn_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_refuse_change();

-- The application role may read and append, nothing else.
REVOKE ALL ON events FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO cairn_app;
GRANT SELECT, INSERT ON events TO cairn_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON subscription_checkpoints TO cairn_app;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
  RAISE EXCEPTION 'migration 1 (the event log) is not reversible: it would destroy the system of record';
END
$$;
-- +goose StatementEnd
