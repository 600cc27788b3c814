-- agent_presence is rewritten row by row all the time: every replica
-- refreshes seen_at for each agent it holds, 10,000 rows every few seconds
-- on a large fleet. With seen_at indexed, no refresh could be a heap-only
-- update: each one added an entry to both indexes and left dead ones for
-- vacuum, and during a fan-out to 10,000 agents the refreshes took
-- PostgreSQL up to a tenth as long as the fan-out's own writes. The only
-- reader (Presence.Elsewhere) wants nearly every row the table holds, which
-- a scan of a few hundred pages serves as well as the index did. Without
-- the index, and with room left on each page, a refresh stays on its page.

-- +goose Up
DROP INDEX IF EXISTS agent_presence_seen_at_idx;
ALTER TABLE agent_presence SET (fillfactor = 50);

-- +goose Down
ALTER TABLE agent_presence RESET (fillfactor);
CREATE INDEX IF NOT EXISTS agent_presence_seen_at_idx ON agent_presence (seen_at);
