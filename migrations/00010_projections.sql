-- Projections: read models in schema "read", analytics views in schema
-- "analytics", the checkpoints projections keep in the same transaction as
-- their writes, and the events they had to park.
--
-- Read-model tables and the views over them are created at run time by the
-- projection runner acting as cairn_app (a rebuild makes new tables and
-- switches the views), so cairn_app owns them; this migration only makes the
-- places they live in.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
  -- Read-only consumers of the analytics schema. Roles are cluster-wide, so
  -- several Cairn databases of one cluster share it.
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cairn_analytics') THEN
    CREATE ROLE cairn_analytics NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object THEN
  RAISE NOTICE 'role cairn_analytics already exists';
END
$$;
-- +goose StatementEnd

CREATE SCHEMA read;
CREATE SCHEMA analytics;

-- The runner creates versioned tables and switches views during rebuilds.
GRANT USAGE, CREATE ON SCHEMA read TO cairn_app;
GRANT USAGE, CREATE ON SCHEMA analytics TO cairn_app;

-- Analytics consumers see the analytics schema and nothing else: no USAGE on
-- read, no grant on the event log or on any table of public.
GRANT USAGE ON SCHEMA analytics TO cairn_analytics;
GRANT SELECT ON ALL TABLES IN SCHEMA analytics TO cairn_analytics;
ALTER DEFAULT PRIVILEGES IN SCHEMA analytics GRANT SELECT ON TABLES TO cairn_analytics;
ALTER DEFAULT PRIVILEGES FOR ROLE cairn_app IN SCHEMA analytics GRANT SELECT ON TABLES TO cairn_analytics;

-- One row per build of a projection. A projection has one live build (the
-- stable views in "read" point at its tables) and at most one building build
-- (a rebuild catching up from position zero); retired builds are kept so
-- that build numbers, which name tables, are never reused.
CREATE TABLE projection_checkpoints (
    name                 text        NOT NULL,
    build                integer     NOT NULL CHECK (build >= 1),
    version              integer     NOT NULL CHECK (version >= 1),
    status               text        NOT NULL CHECK (status IN ('live', 'building', 'retired')),
    -- Base names of the build's tables, to drop them when it retires even
    -- after the code that made them has changed.
    tables               text[]      NOT NULL,
    -- The cursor of the last event applied (or passed over): global order
    -- is (tx_id, position), see eventstore.Cursor.
    tx_id                xid8        NOT NULL DEFAULT '0',
    position             bigint      NOT NULL DEFAULT 0,
    last_event_at        timestamptz,
    applied              bigint      NOT NULL DEFAULT 0,
    parked               bigint      NOT NULL DEFAULT 0,
    last_error           text,
    last_error_at        timestamptz,
    rebuild_requested_at timestamptz,
    started_at           timestamptz NOT NULL DEFAULT now(),
    live_at              timestamptz,
    retired_at           timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, build)
);
CREATE UNIQUE INDEX projection_checkpoints_one_live ON projection_checkpoints (name) WHERE status = 'live';
CREATE UNIQUE INDEX projection_checkpoints_one_building ON projection_checkpoints (name) WHERE status = 'building';

-- Events a projection could not apply after its retries: the projection
-- moved on past them, and they stay here for an operator to see.
CREATE TABLE projection_parked (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    projection  text        NOT NULL,
    build       integer     NOT NULL,
    tx_id       xid8        NOT NULL,
    position    bigint      NOT NULL,
    stream_id   text        NOT NULL,
    event_type  text        NOT NULL,
    attempts    integer     NOT NULL,
    error       text        NOT NULL,
    parked_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (projection, build, position)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON projection_checkpoints TO cairn_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON projection_parked TO cairn_app;

-- Auditors' replays build every projection into a scratch schema. Creating a
-- schema needs CREATE on the database, which cairn_app does not get: this
-- function creates only schemas named replay_*, owned by cairn_app (which may
-- then fill and drop them).
-- +goose StatementBegin
CREATE FUNCTION cairn_create_replay_schema(schema_name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  IF schema_name !~ '^replay_[a-z0-9_]{1,50}$' THEN
    RAISE EXCEPTION 'replay schema name % must match replay_[a-z0-9_]{1,50}', schema_name
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  EXECUTE format('CREATE SCHEMA %I AUTHORIZATION cairn_app', schema_name);
END
$$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION cairn_create_replay_schema(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cairn_create_replay_schema(text) TO cairn_app;

-- +goose Down
DROP FUNCTION cairn_create_replay_schema(text);
DROP TABLE projection_parked;
DROP TABLE projection_checkpoints;
DROP SCHEMA analytics CASCADE;
DROP SCHEMA read CASCADE;
-- The role is cluster-wide and may serve other databases: it stays.
