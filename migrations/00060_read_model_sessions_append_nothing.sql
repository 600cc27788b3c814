-- Sessions named "cairn read models" (eventstore.ReadModelAppName) write read
-- models and never events, so readers of the log do not wait for their
-- transactions (see eventstore.HorizonSQL). This trigger keeps that promise:
-- an insert into events from such a session is refused, since readers could
-- otherwise pass its events before they commit and never see them.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION cairn_refuse_read_model_append() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('application_name') = 'cairn read models' THEN
    RAISE EXCEPTION 'a "cairn read models" session may not append events: readers of the log do not wait for its transactions'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER events_not_from_read_models BEFORE INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_refuse_read_model_append();

-- +goose Down
DROP TRIGGER events_not_from_read_models ON events;
DROP FUNCTION cairn_refuse_read_model_append();
