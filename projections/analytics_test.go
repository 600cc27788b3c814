package projections_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"cairn/projections/models"
)

// The analytics role reads every analytics view and nothing else, and
// writes nowhere.
func TestAnalyticsRoleReadsAnalyticsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 20, 800)
	r := start(t, e, fastOptions())
	waitAll(t, e, r.Runner)

	ctx := testCtx(t)
	conn, err := e.admin.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET ROLE cairn_analytics`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, `RESET ROLE`) }()

	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.views WHERE table_schema = 'analytics' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var visible []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		visible = append(visible, name)
	}
	rows.Close()
	var want []string
	for _, v := range models.AnalyticsViews() {
		want = append(want, v.Name)
	}
	slices.Sort(want)
	if !slices.Equal(visible, want) {
		t.Fatalf("analytics views visible to the role: %v, want %v", visible, want)
	}
	for _, v := range visible {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM analytics.`+v).Scan(&n); err != nil {
			t.Errorf("read analytics.%s: %v", v, err)
		}
	}
	var jobs int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(jobs), 0) FROM analytics.job_outcomes_daily`).Scan(&jobs); err != nil || jobs == 0 {
		t.Errorf("job outcomes: %d jobs, %v", jobs, err)
	}

	refused := []string{
		`SELECT count(*) FROM read.nodes`,
		`SELECT count(*) FROM read.api_tokens`,
		`SELECT count(*) FROM read.jobs_v1_b1`,
		`SELECT count(*) FROM events`,
		`SELECT count(*) FROM projection_checkpoints`,
		`SELECT count(*) FROM projection_parked`,
		`SELECT count(*) FROM subscription_checkpoints`,
		`INSERT INTO analytics.event_volume_daily (day, stream_type, event_type, events, first_at, last_at) VALUES (now(), 'x', 'y', 1, now(), now())`,
		`UPDATE analytics.nodes SET hostname = 'x'`,
		`DELETE FROM analytics.tenants`,
		`CREATE TABLE analytics.mine (x int)`,
		`CREATE VIEW analytics.mine AS SELECT 1`,
		`CREATE TABLE public.mine (x int)`,
		`DROP VIEW analytics.nodes`,
		`SELECT cairn_create_replay_schema('replay_x')`,
	}
	for _, sql := range refused {
		_, err := conn.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" && pgErr.Code != "55000" {
			t.Errorf("%s: want a refusal (insufficient privilege), got %v", sql, err)
		}
	}
}
