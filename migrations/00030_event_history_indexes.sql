-- Indexes for the event history the API serves to auditors and tenants: the
-- events query filters by actor, tenant, correlation id, stream type and
-- time, and pages in global order (tx_id, position). Each B-tree index ends
-- with the global order so a filtered page is an index range scan, not a sort
-- of every matching event.
--
-- Every index here slows appends, so there are few: metadata is json (its
-- exact bytes are hashed), so the metadata ones are partial expression
-- indexes that skip events without that key; an event type filter is
-- usually combined with a stream type and served by that index; time is a
-- BRIN index, a few pages that stay cheap because the log is appended in
-- time order.

-- +goose Up
CREATE INDEX events_by_actor ON events ((metadata->>'actor'), tx_id, position)
    WHERE metadata->>'actor' IS NOT NULL;
CREATE INDEX events_by_tenant ON events ((metadata->>'tenant'), tx_id, position)
    WHERE metadata->>'tenant' IS NOT NULL;
CREATE INDEX events_by_correlation ON events ((metadata->>'correlationId'), tx_id, position)
    WHERE metadata->>'correlationId' IS NOT NULL;
CREATE INDEX events_by_stream_type ON events (stream_type, tx_id, position);
CREATE INDEX events_by_time ON events USING brin (recorded_at);

-- +goose Down
DROP INDEX events_by_time;
DROP INDEX events_by_stream_type;
DROP INDEX events_by_correlation;
DROP INDEX events_by_tenant;
DROP INDEX events_by_actor;
