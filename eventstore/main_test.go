package eventstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/internal/testdb"

	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// Test event types: a current one with an upcaster from version 1, and a
// plain one.
type widgetRenamed struct {
	Name  string `json:"name"`
	Title string `json:"title"` // added in schema version 2
}

func (widgetRenamed) EventType() string { return "test.widget_renamed" }

type widgetCounted struct {
	N  int    `json:"n"`
	ID string `json:"id,omitempty"`
}

func (widgetCounted) EventType() string { return "test.widget_counted" }

func testRegistry() *domain.Registry {
	r := domain.NewRegistry()
	domain.Register[widgetRenamed](r, 2, domain.Upcaster{From: 1, Upgrade: func(p json.RawMessage) (json.RawMessage, error) {
		var v map[string]any
		if err := json.Unmarshal(p, &v); err != nil {
			return nil, err
		}
		v["title"] = "untitled"
		return json.Marshal(v)
	}})
	domain.Register[widgetCounted](r, 1)
	return r
}

type env struct {
	db    testdb.DB
	app   *pgxpool.Pool // the pool the store appends through
	store *eventstore.Store
}

func newEnv(t *testing.T, opts eventstore.Options) env {
	t.Helper()
	db := testdb.New(t)
	app := db.AppPool(t)
	s := eventstore.New(app, testRegistry(), opts)
	t.Cleanup(s.Close)
	return env{db: db, app: app, store: s}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func one(stream string, expected eventstore.ExpectedVersion, evs ...domain.Event) eventstore.AppendRequest {
	return eventstore.AppendRequest{Streams: []eventstore.StreamAppend{{StreamID: stream, StreamType: "widget", Expected: expected, Events: evs}}}
}
