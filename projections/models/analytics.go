package models

import "cairn/projections"

// AnalyticsViews are the analytics schema: stable views over the read
// models for the cairn_analytics role, documented in docs/analytics.md.
// Times are UTC; days are UTC calendar days. Views later in the list may
// read earlier ones, so the order matters.
func AnalyticsViews() []projections.View {
	a := projections.AnalyticsSchema
	return []projections.View{
		{Schema: a, Name: "nodes", Needs: []string{"nodes"}, Query: `
			SELECT id AS node_id, hostname, location_id, status, cordoned, labels, facts,
			       enrolled_at, last_seen_at, updated_at
			FROM {read}.nodes`},
		{Schema: a, Name: "locations", Needs: []string{"locations"}, Query: `
			SELECT id AS location_id, name, description, status, created_at FROM {read}.locations`},
		{Schema: a, Name: "tenants", Needs: []string{"tenants"}, Query: `
			SELECT id AS tenant_id, name, status, created_at FROM {read}.tenants`},
		{Schema: a, Name: "templates", Needs: []string{"templates"}, Query: `
			SELECT id AS template_id, name, version, vendor, status, registered_at, published_at, deprecated_at
			FROM {read}.templates`},
		{Schema: a, Name: "job_outcomes", Needs: []string{"jobs"}, Query: `
			SELECT id AS job_id, parent_id, tenant_id, node_id, kind, action, state AS outcome, attempt, exit_code,
			       submitted_at, started_at, finished_at,
			       (finished_at AT TIME ZONE 'UTC')::date AS day,
			       extract(epoch FROM started_at - submitted_at)::double precision AS wait_seconds,
			       extract(epoch FROM finished_at - started_at)::double precision AS run_seconds,
			       extract(epoch FROM finished_at - submitted_at)::double precision AS total_seconds
			FROM {read}.jobs
			WHERE state IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'lost') AND finished_at IS NOT NULL`},
		{Schema: a, Name: "job_outcomes_daily", Needs: []string{"jobs"}, Query: `
			SELECT day, node_id, kind, action, outcome,
			       count(*) AS jobs,
			       avg(run_seconds) AS avg_run_seconds,
			       percentile_cont(0.5) WITHIN GROUP (ORDER BY run_seconds) AS p50_run_seconds,
			       percentile_cont(0.95) WITHIN GROUP (ORDER BY run_seconds) AS p95_run_seconds,
			       max(run_seconds) AS max_run_seconds,
			       avg(total_seconds) AS avg_total_seconds
			FROM {views}.job_outcomes
			GROUP BY day, node_id, kind, action, outcome`},
		{Schema: a, Name: "services", Needs: []string{"services"}, Query: `
			SELECT id AS service_id, tenant_id, template_name, template_version, state, failed_in,
			       requested_at, registered_at, first_running_at, removed_at,
			       extract(epoch FROM registered_at - requested_at)::double precision AS register_seconds,
			       extract(epoch FROM first_running_at - requested_at)::double precision AS deploy_seconds
			FROM {read}.services`},
		{Schema: a, Name: "service_counts", Needs: []string{"services"}, Query: `
			SELECT template_name, template_version, tenant_id, state,
			       count(*) AS services,
			       avg(deploy_seconds) AS avg_deploy_seconds,
			       percentile_cont(0.95) WITHIN GROUP (ORDER BY deploy_seconds) AS p95_deploy_seconds,
			       max(deploy_seconds) AS max_deploy_seconds
			FROM {views}.services
			GROUP BY template_name, template_version, tenant_id, state`},
		{Schema: a, Name: "node_status_periods", Needs: []string{"nodes", "node_status_periods"}, Query: `
			SELECT node_id, status, started_at, ended_at FROM {read}.node_status_periods
			UNION ALL
			SELECT id, status, status_since, NULL FROM {read}.nodes WHERE status_since IS NOT NULL`},
		{Schema: a, Name: "node_availability_daily", Needs: []string{"nodes", "node_status_periods"}, Query: `
			WITH p AS (
			  SELECT node_id, status,
			         started_at AT TIME ZONE 'UTC' AS s,
			         coalesce(ended_at, now()) AT TIME ZONE 'UTC' AS e
			  FROM {views}.node_status_periods
			  WHERE status <> 'decommissioned'
			), d AS (
			  SELECT p.node_id, p.status, day::date AS day,
			         extract(epoch FROM least(p.e, day + interval '1 day') - greatest(p.s, day))::double precision AS seconds
			  FROM p CROSS JOIN LATERAL generate_series(date_trunc('day', p.s), date_trunc('day', p.e), interval '1 day') AS day
			)
			SELECT node_id, day,
			       coalesce(sum(seconds) FILTER (WHERE status IN ('online', 'draining', 'drained')), 0) AS connected_seconds,
			       sum(seconds) AS observed_seconds,
			       coalesce(sum(seconds) FILTER (WHERE status IN ('online', 'draining', 'drained')), 0) / sum(seconds) AS availability
			FROM d WHERE seconds > 0
			GROUP BY node_id, day`},
		{Schema: a, Name: "event_volume_daily", Needs: []string{"event_volume"}, Query: `
			SELECT day, stream_type, event_type, events, first_at, last_at FROM {read}.event_volume`},
	}
}
