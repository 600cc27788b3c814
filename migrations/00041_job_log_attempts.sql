-- A retried job's output continues its log: the agent numbers each
-- attempt's chunks from 1, and the control plane stores attempt n's chunk s
-- as seq base(n) + s, where base(n) is the highest seq stored for the job
-- when attempt n sent its first chunk. Attempt 1 has base 0 and no row.

-- +goose Up
CREATE TABLE job_log_attempts (
    job_id  text   NOT NULL,
    attempt bigint NOT NULL CHECK (attempt >= 2),
    base    bigint NOT NULL CHECK (base >= 0),
    PRIMARY KEY (job_id, attempt)
);
GRANT SELECT, INSERT, DELETE ON job_log_attempts TO cairn_app;

-- +goose Down
DROP TABLE job_log_attempts;
