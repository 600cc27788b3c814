package models

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/template"
	"cairn/projections"
)

// Catalog keeps one row per template version (read.templates), with its
// descriptor.
type Catalog struct{}

func (Catalog) Name() string     { return "catalog" }
func (Catalog) Version() int     { return 1 }
func (Catalog) Tables() []string { return []string{"templates"} }
func (Catalog) Filter() projections.Filter {
	return projections.Filter{StreamTypes: []string{"template"}}
}

func (Catalog) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			id                 text PRIMARY KEY,
			name               text NOT NULL,
			version            text NOT NULL,
			vendor             text NOT NULL,
			category           text,
			description        text,
			status             text NOT NULL,
			digest             text,
			descriptor         json,
			registered_at      timestamptz,
			published_at       timestamptz,
			deprecated_at      timestamptz,
			deprecation_reason text,
			stream_version     bigint NOT NULL,
			position           bigint NOT NULL
		);`, t.Table("templates")))
	return err
}

func (Catalog) Index(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE INDEX ON %[1]s (name, id);
		CREATE INDEX ON %[1]s (vendor, id);
		CREATE INDEX ON %[1]s (category, id);`, t.Table("templates")))
	return err
}

type templateRow struct {
	template.TemplateVersion
	id       string
	version  int64
	position int64
}

var templateColumns = []column{
	{"id", kText}, {"name", kText}, {"version", kText}, {"vendor", kText}, {"category", kNText}, {"description", kNText},
	{"status", kText}, {"digest", kNText},
	{"descriptor", kJSON}, {"registered_at", kTime}, {"published_at", kTime}, {"deprecated_at", kTime},
	{"deprecation_reason", kNText}, {"stream_version", kInt}, {"position", kInt},
}

func (Catalog) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	rows, err := fold(ctx, tx, evs, "template", loadTemplates(t), func(r *templateRow, e *projections.Event) {
		r.TemplateVersion.Apply(e.Data)
		r.id = e.EntityID()
		r.version, r.position = e.Version, e.Position
	})
	if err != nil {
		return err
	}
	out := newSplit(templateColumns...)
	for _, f := range rows {
		r := f.state
		// The catalog lists and filters by these, so they get columns.
		var meta struct {
			Metadata struct {
				Category    string `json:"category"`
				Description string `json:"description"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(r.Descriptor, &meta)
		out.row(f.existed).text(r.id).text(r.Name).text(r.Version).text(r.Vendor).ntext(meta.Metadata.Category).
			ntext(meta.Metadata.Description).text(string(r.Status)).ntext(r.Digest).
			json(r.Descriptor).time(r.RegisteredAt).time(r.PublishedAt).time(r.DeprecatedAt).
			ntext(r.DeprecationReason).int(r.version).int(r.position)
	}
	return write(ctx, tx, out.writes(t.Table("templates"), "id")...)
}

func loadTemplates(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*templateRow, error) {
	sql := `SELECT id, name, version, vendor, status, coalesce(digest, ''), coalesce(descriptor::text, ''), registered_at,
		published_at, deprecated_at, coalesce(deprecation_reason, ''), stream_version, position
		FROM ` + t.Table("templates") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*templateRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, r *templateRow) (string, error) {
			var status, descriptor string
			var registered, published, deprecated pgtype.Timestamptz
			err := rows.Scan(&r.id, &r.Name, &r.Version, &r.Vendor, &status, &r.Digest, &descriptor, &registered,
				&published, &deprecated, &r.DeprecationReason, &r.version, &r.position)
			if err != nil {
				return "", err
			}
			r.Status = template.Status(status)
			if descriptor != "" {
				r.Descriptor = []byte(descriptor)
			}
			r.RegisteredAt, r.PublishedAt, r.DeprecatedAt = ts(registered), ts(published), ts(deprecated)
			return r.id, nil
		})
	}
}
