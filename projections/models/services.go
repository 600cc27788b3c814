package models

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/projections"
)

// Services keeps one row per service (read.services) and per resource
// (read.resources). Both live in one projection so that a resource and its
// service are always as of the same event.
type Services struct{}

func (Services) Name() string     { return "services" }
func (Services) Version() int     { return 3 } // 2: resources' node and drift; 3: revisions
func (Services) Tables() []string { return []string{"services", "resources"} }
func (Services) Filter() projections.Filter {
	return projections.Filter{StreamTypes: []string{"service", "resource"}}
}

func (Services) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			id               text PRIMARY KEY,
			tenant_id        text NOT NULL,
			name             text NOT NULL,
			template_name    text NOT NULL,
			template_version text NOT NULL,
			state            text NOT NULL,
			failed_in        text,
			cause            text,
			variables        json,
			outputs          json,
			resource_ids     json NOT NULL,
			remaining        json,
			requested_at     timestamptz NOT NULL,
			registered_at    timestamptz,
			first_running_at timestamptz,
			removed_at       timestamptz,
			updated_at       timestamptz,
			revision         integer NOT NULL DEFAULT 1,
			last_revision    integer NOT NULL DEFAULT 1,
			leaving          json,
			update_from      text,
			blueprint        text,
			stream_version   bigint NOT NULL,
			position         bigint NOT NULL
		) WITH (fillfactor = 80);
		CREATE TABLE %[2]s (
			id             text PRIMARY KEY,
			service_id     text NOT NULL,
			plugin         text NOT NULL,
			type           text NOT NULL,
			state          text NOT NULL,
			failed_in      text,
			error          text,
			properties     json,
			depends_on     json NOT NULL,
			outputs        json,
			node_id        text,
			drift          text,
			drift_detail   text,
			drift_since    timestamptz,
			planned_at     timestamptz,
			updated_at     timestamptz,
			revision       integer NOT NULL DEFAULT 1,
			update_from    text,
			health         json,
			name           text,
			stream_version bigint NOT NULL,
			position       bigint NOT NULL
		) WITH (fillfactor = 80);`, t.Table("services"), t.Table("resources")))
	return err
}

func (Services) Index(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE INDEX ON %[1]s (tenant_id, requested_at DESC, id DESC);
		CREATE INDEX ON %[1]s (requested_at DESC, id DESC);
		CREATE INDEX ON %[1]s (template_name, template_version);
		CREATE INDEX ON %[1]s (tenant_id, blueprint) WHERE blueprint IS NOT NULL;
		CREATE INDEX ON %[2]s (service_id, id);`, t.Table("services"), t.Table("resources")))
	return err
}

type serviceRow struct {
	service.Service
	registeredAt, firstRunningAt, removedAt pgtype.Timestamptz
	version, position                       int64
}

var serviceColumns = []column{
	{"id", kText}, {"tenant_id", kText}, {"name", kText}, {"template_name", kText}, {"template_version", kText},
	{"state", kText}, {"failed_in", kNText}, {"cause", kNText}, {"variables", kJSON}, {"outputs", kJSON},
	{"resource_ids", kJSON}, {"remaining", kJSON}, {"requested_at", kTime}, {"registered_at", kTime},
	{"first_running_at", kTime}, {"removed_at", kTime}, {"updated_at", kTime}, {"revision", kInt}, {"last_revision", kInt},
	{"leaving", kJSON}, {"update_from", kNText}, {"blueprint", kNText}, {"stream_version", kInt}, {"position", kInt},
}

type resourceRow struct {
	resource.Resource
	version, position int64
}

var resourceColumns = []column{
	{"id", kText}, {"service_id", kText}, {"plugin", kText}, {"type", kText}, {"state", kText},
	{"failed_in", kNText}, {"error", kNText}, {"properties", kJSON}, {"depends_on", kJSON}, {"outputs", kJSON},
	{"node_id", kNText}, {"drift", kNText}, {"drift_detail", kNText}, {"drift_since", kTime},
	{"planned_at", kTime}, {"updated_at", kTime}, {"revision", kInt}, {"update_from", kNText}, {"health", kJSON}, {"name", kNText}, {"stream_version", kInt}, {"position", kInt},
}

func stamp(t *pgtype.Timestamptz, at pgtype.Timestamptz, once bool) {
	if once && t.Valid {
		return
	}
	*t = at
}

func (Services) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	services, err := fold(ctx, tx, evs, "service", loadServices(t), func(s *serviceRow, e *projections.Event) {
		s.Service.Apply(e.Data)
		if s.ID == "" {
			s.ID = e.EntityID()
		}
		if s.RequestedAt.IsZero() {
			// Lists sort by it; see Jobs.
			s.RequestedAt = e.RecordedAt.UTC()
		}
		at := pgtype.Timestamptz{Time: s.UpdatedAt, Valid: !s.UpdatedAt.IsZero()}
		switch e.Data.(type) {
		case service.Registered:
			stamp(&s.registeredAt, at, true)
		case service.Started:
			stamp(&s.firstRunningAt, at, true)
		case service.Removed, service.CleanedUp:
			stamp(&s.removedAt, at, false)
		}
		s.version, s.position = e.Version, e.Position
	})
	if err != nil {
		return err
	}
	resources, err := fold(ctx, tx, evs, "resource", loadResources(t), func(r *resourceRow, e *projections.Event) {
		r.Resource.Apply(e.Data)
		if r.ID == "" {
			r.ID = e.EntityID()
		}
		r.version, r.position = e.Version, e.Position
	})
	if err != nil {
		return err
	}
	out := newSplit(serviceColumns...)
	for _, f := range services {
		s := f.state
		ids := s.ResourceIDs
		if ids == nil {
			ids = []string{}
		}
		var remaining, leaving []byte
		if len(s.Remaining) > 0 {
			remaining, _ = json.Marshal(s.Remaining)
		}
		if s.Leaving != nil {
			leaving, _ = json.Marshal(s.Leaving)
		}
		out.row(f.existed).text(s.ID).text(s.TenantID).text(s.Name).text(s.TemplateName).text(s.TemplateVersion).
			text(string(s.Status)).ntext(string(s.FailedIn)).ntext(s.Cause).json(s.Variables).json(s.Outputs).
			jsonOf(ids).json(remaining).time(s.RequestedAt).time(ts(s.registeredAt)).time(ts(s.firstRunningAt)).
			time(ts(s.removedAt)).time(s.UpdatedAt).int(int64(max(s.Revision, 1))).int(int64(max(s.LastRevision, s.Revision, 1))).
			json(leaving).ntext(string(s.UpdateFrom)).ntext(s.Blueprint).int(s.version).int(s.position)
	}
	rout := newSplit(resourceColumns...)
	for _, f := range resources {
		r := f.state
		deps := r.DependsOn
		if deps == nil {
			deps = []string{}
		}
		var health []byte
		if len(r.Health) > 0 {
			health, _ = json.Marshal(r.Health)
		}
		rout.row(f.existed).text(r.ID).text(r.ServiceID).text(r.Plugin).text(r.Type).text(string(r.Status)).
			ntext(string(r.FailedIn)).ntext(r.Error).json(r.Properties).jsonOf(deps).json(r.Outputs).
			ntext(r.NodeID).ntext(string(r.Drift)).ntext(r.DriftDetail).time(r.DriftSince).
			time(r.PlannedAt).time(r.UpdatedAt).int(int64(max(r.Revision, 1))).ntext(string(r.UpdateFrom)).json(health).ntext(r.Name).int(r.version).int(r.position)
	}
	return write(ctx, tx, append(out.writes(t.Table("services"), "id"), rout.writes(t.Table("resources"), "id")...)...)
}

func loadServices(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*serviceRow, error) {
	sql := `SELECT id, tenant_id, name, template_name, template_version, state, coalesce(failed_in, ''), coalesce(cause, ''),
		coalesce(variables::text, ''), coalesce(outputs::text, ''), resource_ids::text, coalesce(remaining::text, ''),
		requested_at, registered_at, first_running_at, removed_at, updated_at, revision, last_revision,
		coalesce(leaving::text, ''), coalesce(update_from, ''), coalesce(blueprint, ''), stream_version, position
		FROM ` + t.Table("services") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*serviceRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, s *serviceRow) (string, error) {
			var state, failedIn, variables, outputs, resourceIDs, remaining, leaving, updateFrom string
			var requested, updated pgtype.Timestamptz
			var revision, lastRevision int32
			err := rows.Scan(&s.ID, &s.TenantID, &s.Name, &s.TemplateName, &s.TemplateVersion, &state, &failedIn, &s.Cause,
				&variables, &outputs, &resourceIDs, &remaining, &requested, &s.registeredAt, &s.firstRunningAt,
				&s.removedAt, &updated, &revision, &lastRevision, &leaving, &updateFrom, &s.Blueprint, &s.version, &s.position)
			if err != nil {
				return "", err
			}
			s.Revision, s.LastRevision, s.UpdateFrom = int(revision), int(lastRevision), service.Status(updateFrom)
			if leaving != "" {
				s.Leaving = &service.Revision{}
				if err := json.Unmarshal([]byte(leaving), s.Leaving); err != nil {
					return "", fmt.Errorf("service %q: the revision it leaves: %w", s.ID, err)
				}
			}
			s.Status, s.FailedIn = service.Status(state), service.Phase(failedIn)
			s.Variables, s.Outputs = rawOrNil(variables), rawOrNil(outputs)
			if err := json.Unmarshal([]byte(resourceIDs), &s.ResourceIDs); err != nil {
				return "", fmt.Errorf("service %q: resource ids: %w", s.ID, err)
			}
			if remaining != "" {
				if err := json.Unmarshal([]byte(remaining), &s.Remaining); err != nil {
					return "", fmt.Errorf("service %q: remaining resources: %w", s.ID, err)
				}
			}
			s.RequestedAt, s.UpdatedAt = ts(requested), ts(updated)
			return s.ID, nil
		})
	}
}

func loadResources(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*resourceRow, error) {
	sql := `SELECT id, service_id, plugin, type, state, coalesce(failed_in, ''), coalesce(error, ''),
		coalesce(properties::text, ''), depends_on::text, coalesce(outputs::text, ''), coalesce(node_id, ''),
		coalesce(drift, ''), coalesce(drift_detail, ''), drift_since, planned_at, updated_at,
		revision, coalesce(update_from, ''), coalesce(health::text, ''), coalesce(name, ''), stream_version, position FROM ` + t.Table("resources") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*resourceRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, r *resourceRow) (string, error) {
			var state, failedIn, properties, deps, outputs, drift, updateFrom, health string
			var planned, updated, driftSince pgtype.Timestamptz
			var revision int32
			err := rows.Scan(&r.ID, &r.ServiceID, &r.Plugin, &r.Type, &state, &failedIn, &r.Error, &properties, &deps,
				&outputs, &r.NodeID, &drift, &r.DriftDetail, &driftSince, &planned, &updated, &revision, &updateFrom, &health, &r.Name, &r.version, &r.position)
			if err != nil {
				return "", err
			}
			r.Revision, r.UpdateFrom = int(revision), resource.Status(updateFrom)
			if health != "" {
				if err := json.Unmarshal([]byte(health), &r.Health); err != nil {
					return "", fmt.Errorf("resource %q: health: %w", r.ID, err)
				}
			}
			r.Status, r.FailedIn = resource.Status(state), resource.Phase(failedIn)
			r.Properties, r.Outputs = rawOrNil(properties), rawOrNil(outputs)
			if err := json.Unmarshal([]byte(deps), &r.DependsOn); err != nil {
				return "", fmt.Errorf("resource %q: dependencies: %w", r.ID, err)
			}
			r.PlannedAt, r.UpdatedAt = ts(planned), ts(updated)
			r.Drift, r.DriftSince = resource.DriftKind(drift), ts(driftSince)
			return r.ID, nil
		})
	}
}

func rawOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}
