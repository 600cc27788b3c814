-- Tables watermill-sql publishes to: parked (poison) messages that a handler
-- could not process, kept for operators to inspect and replay.

-- +goose Up
CREATE TABLE watermill_cairn_poison (
    "offset"         BIGSERIAL,
    "uuid"           VARCHAR(36) NOT NULL,
    "created_at"     TIMESTAMP   NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "payload"        JSON DEFAULT NULL,
    "metadata"       JSON DEFAULT NULL,
    "transaction_id" xid8        NOT NULL,
    PRIMARY KEY ("transaction_id", "offset")
);
GRANT SELECT, INSERT ON watermill_cairn_poison TO cairn_app;
GRANT USAGE ON SEQUENCE watermill_cairn_poison_offset_seq TO cairn_app;

-- +goose Down
DROP TABLE watermill_cairn_poison;
