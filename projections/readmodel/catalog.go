package readmodel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/template"
)

// Template is one version of a catalog template.
type Template struct {
	// ID is "name@version".
	ID                string
	Name              string
	Version           string
	Vendor            string
	Category          string
	Description       string
	Status            template.Status
	Digest            string
	Descriptor        json.RawMessage
	RegisteredAt      time.Time
	PublishedAt       time.Time
	DeprecatedAt      time.Time
	DeprecationReason string
	StreamVersion     int64
	Position          int64
}

// TemplateFilter narrows a catalog list. Empty fields match every version.
type TemplateFilter struct {
	Name     string
	Vendor   string
	Category string
	Status   []template.Status
	// LatestOnly keeps the most recently published version of each name.
	LatestOnly bool
}

const templateColumns = `id, name, version, vendor, coalesce(category, ''), coalesce(description, ''), status,
	coalesce(digest, ''), coalesce(descriptor::text, ''), registered_at, published_at, deprecated_at,
	coalesce(deprecation_reason, ''), stream_version, position`

func scanTemplate(rows pgx.Row) (Template, error) {
	var t Template
	var status, descriptor string
	var registered, published, deprecated pgtype.Timestamptz
	err := rows.Scan(&t.ID, &t.Name, &t.Version, &t.Vendor, &t.Category, &t.Description, &status, &t.Digest, &descriptor,
		&registered, &published, &deprecated, &t.DeprecationReason, &t.StreamVersion, &t.Position)
	if descriptor != "" {
		t.Descriptor = json.RawMessage(descriptor)
	}
	t.Status = template.Status(status)
	t.RegisteredAt, t.PublishedAt, t.DeprecatedAt = ts(registered), ts(published), ts(deprecated)
	return t, err
}

var templateOrder = order{name: "templates", cols: []string{"id"}, times: []bool{false}}

// ListTemplates lists template versions by id (name@version).
func (r *Reader) ListTemplates(ctx context.Context, f TemplateFilter, p Page) (Connection[Template], error) {
	q := &query{}
	if f.Name != "" {
		q.add("name = " + q.arg(f.Name))
	}
	if f.Vendor != "" {
		q.add("vendor = " + q.arg(f.Vendor))
	}
	if f.Category != "" {
		q.add("category = " + q.arg(f.Category))
	}
	if len(f.Status) > 0 {
		q.add("status = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	if f.LatestOnly {
		q.add(`id IN (SELECT DISTINCT ON (name) id FROM ` + r.table("templates") + `
			WHERE status = 'published' ORDER BY name, published_at DESC, id DESC)`)
	}
	return list(ctx, r.db, templateColumns+" FROM "+r.table("templates"), q, templateOrder, p, scanTemplate,
		func(t *Template) []any { return []any{t.ID} })
}

// Template returns one template version by name and version, or a
// *domain.NotFoundError.
func (r *Reader) Template(ctx context.Context, name, version string) (Template, error) {
	return one(ctx, r.db, templateColumns+" FROM "+r.table("templates"), "template", template.ID(name, version),
		scanTemplate, func(t *Template) string { return t.ID })
}

// TemplatesByID returns template versions (ids "name@version") in the order
// of ids, nil where none exists.
func (r *Reader) TemplatesByID(ctx context.Context, ids []string) ([]*Template, error) {
	return byIDs(ctx, r.db, templateColumns+" FROM "+r.table("templates"), "templates", ids, scanTemplate,
		func(t *Template) string { return t.ID })
}
