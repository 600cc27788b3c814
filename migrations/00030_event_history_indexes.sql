-- Indexes for the event history the API serves to auditors and tenants: the
-- events query filters by actor, tenant, correlation id, stream type and
-- time, and pages in global order (tx_id, position). Each B-tree index ends
-- with the global order so a filtered page is an index range scan, not a sort
-- of every matching event.
--
-- Every index here slows appends, so there are few: actor, tenant and
-- correlation id are plain columns copied from the metadata at append (no
-- JSON parsing per row), indexed partially to skip events without them; an
-- event type filter is
-- usually combined with a stream type and served by that index; time is a
-- BRIN index, a few pages that stay cheap because the log is appended in
-- time order.

-- +goose Up
CREATE INDEX events_by_actor ON events (actor, tx_id, position) WHERE actor IS NOT NULL;
CREATE INDEX events_by_tenant ON events (tenant, tx_id, position) WHERE tenant IS NOT NULL;
CREATE INDEX events_by_correlation ON events (correlation_id, tx_id, position) WHERE correlation_id IS NOT NULL;
CREATE INDEX events_by_stream_type ON events (stream_type, tx_id, position);
CREATE INDEX events_by_time ON events USING brin (recorded_at);

-- +goose Down
DROP INDEX events_by_time;
DROP INDEX events_by_stream_type;
DROP INDEX events_by_correlation;
DROP INDEX events_by_tenant;
DROP INDEX events_by_actor;
