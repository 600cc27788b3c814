-- Several cairnd replicas on one database: who is there, who owns the work
-- that must happen once, and which replica each agent is connected to.
--
-- cluster_replicas: one row per running replica, refreshed by its heartbeat
-- and removed when it stops (a row whose heartbeat stopped is a replica that
-- died; it is listed as gone, then forgotten).
-- cluster_leases: one row per piece of once-only work. Its owner renews it
-- before expires_at; anyone may take it after. Each change of owner raises
-- epoch, and an owner's appends carry the epoch it holds, checked in the
-- append's own transaction (the fence): a deposed owner appends nothing.
-- agent_presence: the replica each connected agent is on, refreshed while it
-- stays, so the owner of liveness knows connections it does not hold.

-- +goose Up
CREATE TABLE cluster_replicas (
    id         text        PRIMARY KEY,
    address    text        NOT NULL,
    version    text        NOT NULL,
    -- A fingerprint of the key that seals sensitive values: replicas
    -- must share the key, and one with another key refuses to start.
    secrets_key_id text    NOT NULL,
    started_at timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL
);

CREATE TABLE cluster_leases (
    name        text        PRIMARY KEY,
    owner       text        NOT NULL,
    epoch       bigint      NOT NULL CHECK (epoch >= 1),
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

CREATE TABLE agent_presence (
    node_id    text        PRIMARY KEY,
    replica_id text        NOT NULL,
    seen_at    timestamptz NOT NULL
);
CREATE INDEX ON agent_presence (seen_at);

REVOKE ALL ON cluster_replicas, cluster_leases, agent_presence FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON cluster_replicas, cluster_leases, agent_presence TO cairn_app;

-- +goose Down
DROP TABLE agent_presence;
DROP TABLE cluster_leases;
DROP TABLE cluster_replicas;
