-- Job output and node statistics. They are measurements, not state changes:
-- one event per log line or per sample would swamp the event log, so they
-- live in their own append-only tables. Rows are never updated; a periodic
-- retention job deletes those older than the configured age, which is why
-- the application role may DELETE here (and only here).

-- +goose Up
CREATE TABLE job_logs (
    job_id      text        NOT NULL,
    -- Numbers the job's chunks from 1 without gaps, as the agent sent them;
    -- the primary key makes a chunk sent again a no-op.
    seq         bigint      NOT NULL CHECK (seq >= 1),
    stream      text        NOT NULL CHECK (stream IN ('stdout', 'stderr', 'system')),
    data        text        NOT NULL,
    -- When the agent read the chunk.
    time        timestamptz NOT NULL,
    -- When the control plane stored it: retention counts from here, so a
    -- chunk an agent delivers late is not deleted at once.
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, seq)
);
-- Appended in time order, so a BRIN index stays a few pages.
CREATE INDEX job_logs_recorded_at ON job_logs USING brin (recorded_at);

CREATE TABLE node_stats (
    node_id                text             NOT NULL,
    time                   timestamptz      NOT NULL,
    cpu_percent            double precision NOT NULL,
    memory_used_bytes      bigint           NOT NULL,
    memory_available_bytes bigint           NOT NULL,
    swap_used_bytes        bigint           NOT NULL,
    load1                  double precision NOT NULL,
    load5                  double precision NOT NULL,
    load15                 double precision NOT NULL,
    -- [{mountpoint, usedBytes, freeBytes}]
    disks                  jsonb            NOT NULL DEFAULT '[]',
    -- [{name, bytesReceived, bytesSent, packetsReceived, packetsSent, errorsIn, errorsOut}]
    network                jsonb            NOT NULL DEFAULT '[]',
    recorded_at            timestamptz      NOT NULL DEFAULT now(),
    -- One sample per node and instant: a batch sent again is a no-op.
    PRIMARY KEY (node_id, time)
);
CREATE INDEX node_stats_recorded_at ON node_stats USING brin (recorded_at);

GRANT SELECT, INSERT, DELETE ON job_logs, node_stats TO cairn_app;

-- +goose Down
DROP TABLE node_stats;
DROP TABLE job_logs;
