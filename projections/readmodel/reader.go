// Package readmodel queries the read models the projections keep: lists with
// filters and keyset pagination, one entity by id, and many by id at once
// (for data loaders). It reads the stable views of schema "read", or the
// tables of an auditor's replay schema.
//
// Lists are ordered by a key that never changes for a row (its id, or its
// submission time and id), so a page's cursor stays valid however the rows
// change between requests.
package readmodel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"cairn/domain"
)

// DB is what the reader queries: a pool, a connection or a transaction.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Reader queries read models.
type Reader struct {
	db     DB
	schema string
}

// New returns a reader of the live read models (schema "read").
func New(db DB) *Reader { return &Reader{db: db, schema: "read"} }

// InSchema returns a reader of the same tables in another schema, such as
// the scratch schema of an auditor's replay.
func (r *Reader) InSchema(schema string) *Reader { return &Reader{db: r.db, schema: schema} }

func (r *Reader) table(name string) string { return pgx.Identifier{r.schema, name}.Sanitize() }

// Page asks for part of a list: the first First rows after the cursor After
// (an EndCursor or an edge's Cursor of an earlier page; "" for the start).
type Page struct {
	First int    // rows after After; with Last also 0, DefaultFirst
	After string // an EndCursor (or any edge's cursor) this list returned
	Last  int    // rows just before Before, read backwards
	// Before is a StartCursor (or any edge's cursor) this list returned.
	Before string
	// Empty asks for no rows (first: 0 or last: 0): the page only says
	// whether there are rows in its direction.
	Empty bool
}

// FirstPage reports whether the page is a list's whole start or end (no
// cursor) and asks for rows: what a one-row list returns its row for.
func (p Page) FirstPage() bool { return !p.Empty && p.After == "" && p.Before == "" }

// backward reports whether the page is read from its end (last/before).
func (p Page) backward() bool { return p.Last > 0 || (p.Before != "" && p.First == 0) }

// Page sizes.
const (
	DefaultFirst = 50
	MaxFirst     = 500
)

// Connection is a page of a list.
type Connection[T any] struct {
	Edges    []Edge[T]
	PageInfo PageInfo
}

// Edge is one row of a page and its cursor.
type Edge[T any] struct {
	Node   T
	Cursor string
}

// PageInfo says where a page is. StartCursor and EndCursor are "" on an
// empty page.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
	StartCursor     string
	EndCursor       string
}

// Nodes returns the rows of the page.
func (c Connection[T]) Nodes() []T {
	out := make([]T, len(c.Edges))
	for i, e := range c.Edges {
		out[i] = e.Node
	}
	return out
}

// InvalidPageError refuses a page request: a size out of range or a cursor
// this list did not make.
type InvalidPageError struct{ Reason string }

func (e *InvalidPageError) Error() string { return "invalid page: " + e.Reason }

// Is makes errors.Is(err, domain.ErrInvalid) true.
func (e *InvalidPageError) Is(target error) bool { return target == domain.ErrInvalid }

func (p Page) size() (int, error) {
	switch {
	case p.First != 0 && (p.Last != 0 || p.Before != ""), p.Last != 0 && p.After != "":
		return 0, &InvalidPageError{Reason: "page forwards (first, after) or backwards (last, before), not both"}
	case p.Empty:
		return 0, nil
	case p.First < 0 || p.First > MaxFirst:
		return 0, &InvalidPageError{Reason: fmt.Sprintf("first must be between 0 and %d, not %d", MaxFirst, p.First)}
	case p.Last < 0 || p.Last > MaxFirst:
		return 0, &InvalidPageError{Reason: fmt.Sprintf("last must be between 0 and %d, not %d", MaxFirst, p.Last)}
	case p.First > 0:
		return p.First, nil
	case p.Last > 0:
		return p.Last, nil
	}
	return DefaultFirst, nil
}

// order is a list's sort key: columns that together are unique, each text
// or a timestamp, all ascending or all descending.
type order struct {
	name  string // the list, so a cursor of another list is refused
	cols  []string
	times []bool // which columns are timestamps
	desc  bool
}

func (o order) clause() string {
	dir := " ASC"
	if o.desc {
		dir = " DESC"
	}
	return "ORDER BY " + strings.Join(o.cols, dir+", ") + dir
}

// encode makes the opaque cursor of a row's key.
func (o order) encode(key []any) string {
	vals := make([]string, len(key))
	for i, k := range key {
		switch v := k.(type) {
		case time.Time:
			vals[i] = strconv.FormatInt(v.UnixMicro(), 10)
		default:
			vals[i] = fmt.Sprint(v)
		}
	}
	b, _ := json.Marshal(append([]string{o.name}, vals...))
	return base64.RawURLEncoding.EncodeToString(b)
}

// decode reads a cursor back into key values, refusing any this list did
// not make.
func (o order) decode(cursor string) ([]any, error) {
	bad := &InvalidPageError{Reason: fmt.Sprintf("cursor %q was not made by this list: pass an endCursor it returned", cursor)}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, bad
	}
	var vals []string
	if err := json.Unmarshal(b, &vals); err != nil || len(vals) != len(o.cols)+1 || vals[0] != o.name {
		return nil, bad
	}
	out := make([]any, len(o.cols))
	for i, v := range vals[1:] {
		if o.times[i] {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, bad
			}
			out[i] = time.UnixMicro(us).UTC()
		} else {
			out[i] = v
		}
	}
	return out, nil
}

// query gathers a statement's conditions and arguments.
type query struct {
	where []string
	args  []any
}

// arg adds an argument and returns its placeholder.
func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func (q *query) add(cond string) { q.where = append(q.where, cond) }

func (q *query) clause() string {
	if len(q.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(q.where, " AND ")
}

// like makes a case-insensitive substring pattern of s.
func like(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// list runs a page of a list: from is "<columns> FROM <table>", key returns
// a row's sort key in the order's columns.
func list[T any](ctx context.Context, db DB, from string, q *query, o order, p Page,
	scan func(pgx.Row) (T, error), key func(*T) []any) (Connection[T], error) {
	var out Connection[T]
	size, err := p.size()
	if err != nil {
		return out, err
	}
	back := p.backward()
	cursor, cmpDesc := p.After, o.desc
	if back {
		// Read backwards: the reversed order from Before, turned round below.
		cursor, cmpDesc = p.Before, !o.desc
		o.desc = !o.desc
	}
	if cursor != "" {
		vals, err := o.decode(cursor)
		if err != nil {
			return out, err
		}
		var ph []string
		for _, v := range vals {
			ph = append(ph, q.arg(v))
		}
		cmp := ">"
		if cmpDesc {
			cmp = "<"
		}
		q.add("(" + strings.Join(o.cols, ", ") + ") " + cmp + " (" + strings.Join(ph, ", ") + ")")
	}
	sql := "SELECT " + from + q.clause() + " " + o.clause() + " LIMIT " + q.arg(size+1)
	rows, err := db.Query(ctx, sql, q.args...)
	if err != nil {
		return out, fmt.Errorf("list %s: %w", o.name, err)
	}
	defer rows.Close()
	more := false
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return out, fmt.Errorf("list %s: %w", o.name, err)
		}
		if len(out.Edges) == size {
			more = true
			break
		}
		out.Edges = append(out.Edges, Edge[T]{Node: v, Cursor: o.encode(key(&v))})
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("list %s: %w", o.name, err)
	}
	// Relay's rule: the far side of the cursor is reported when a cursor
	// was given (rows were skipped to get there), the near side by looking
	// one row past the page.
	if back {
		slices.Reverse(out.Edges)
		out.PageInfo.HasPreviousPage, out.PageInfo.HasNextPage = more, p.Before != ""
	} else {
		out.PageInfo.HasNextPage, out.PageInfo.HasPreviousPage = more, p.After != ""
	}
	if n := len(out.Edges); n > 0 {
		out.PageInfo.StartCursor, out.PageInfo.EndCursor = out.Edges[0].Cursor, out.Edges[n-1].Cursor
	}
	return out, nil
}

// byIDs loads rows by id, in the order of ids, nil where a row is missing.
func byIDs[T any](ctx context.Context, db DB, from, table string, ids []string, scan func(pgx.Row) (T, error), id func(*T) string) ([]*T, error) {
	out := make([]*T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, "SELECT "+from+" WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", table, err)
	}
	defer rows.Close()
	found := map[string]*T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", table, err)
		}
		found[id(&v)] = &v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", table, err)
	}
	for i, k := range ids {
		out[i] = found[k]
	}
	return out, nil
}

// one loads a row by id, or a *domain.NotFoundError.
func one[T any](ctx context.Context, db DB, from, entity, id string, scan func(pgx.Row) (T, error), idOf func(*T) string) (T, error) {
	rows, err := byIDs(ctx, db, from, entity, []string{id}, scan, idOf)
	if err != nil {
		var zero T
		return zero, err
	}
	if rows[0] == nil {
		var zero T
		return zero, &domain.NotFoundError{Entity: entity, ID: id}
	}
	return *rows[0], nil
}

// jsonInto decodes a nullable JSON column.
func jsonInto(raw []byte, into any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, into)
}
