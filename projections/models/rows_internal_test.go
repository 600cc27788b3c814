package models

import (
	"context"
	"testing"
	"time"

	"cairn/internal/testdb"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// A set-based write sends NULL as a value of the column's own kind ("" for
// text and JSON, the zero time for timestamps), which the statement turns
// back into NULL; a value that is set, however close to those, is kept.
func TestRowsetWritesNullsAndValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.New(t).ConnString)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE rows_test (id text PRIMARY KEY, n text, j json, b jsonb, at timestamptz, day date, c bigint)`); err != nil {
		t.Fatal(err)
	}
	cols := []column{{"id", kText}, {"n", kNText}, {"j", kJSON}, {"b", kJSONB}, {"at", kTime}, {"day", kDate}, {"c", kNInt}}
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC)
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	s := newSplit(cols...)
	s.row(false).text("nulls").ntext("").json(nil).jsonKind(kJSONB, []byte("null")).time(time.Time{}.In(time.FixedZone("x", 3600))).date(day).nint(0, false)
	s.row(false).text("values").ntext(" ").json([]byte(`{"a":[1,2]}`)).jsonKind(kJSONB, []byte(`"null"`)).time(at).date(day).nint(0, true)
	s.row(false).text("updated").ntext("").json(nil).jsonKind(kJSONB, nil).time(time.Time{}).date(day).nint(0, false)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(ctx, tx, s.writes("rows_test", "id")...); err != nil {
		t.Fatal(err)
	}
	upd := newSplit(cols...)
	upd.row(true).text("updated").ntext("x").json([]byte(`[]`)).jsonKind(kJSONB, []byte(`{}`)).time(at.Add(time.Second)).date(day).nint(7, true)
	if err := write(ctx, tx, upd.writes("rows_test", "id")...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SET TIME ZONE 'UTC'`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, want string
	}{
		{"nulls", "null|null|null|null|2026-11-28|null"},
		{"values", ` |{"a":[1,2]}|"null"|2026-11-28 10:00:00.123456+00|2026-11-28|0`},
		{"updated", "x|[]|{}|2026-11-28 10:00:01.123456+00|2026-11-28|7"},
	} {
		var got string
		err := conn.QueryRow(ctx, `SELECT concat_ws('|', coalesce(n, 'null'), coalesce(j::text, 'null'), coalesce(b::text, 'null'),
			coalesce(at::text, 'null'), coalesce(day::text, 'null'), coalesce(c::text, 'null')) FROM rows_test WHERE id = $1`, tc.id).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("row %s reads %q, want %q", tc.id, got, tc.want)
		}
	}
}
