package models

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// kind is how a column travels from Go to PostgreSQL in a set-based write.
type kind int

const (
	kText  kind = iota // text, never NULL
	kNText             // text, "" is NULL
	kTime              // timestamptz, zero is NULL
	kJSON              // json (kept as written) from raw JSON, empty or "null" is NULL
	kJSONB             // jsonb (for columns queried inside), likewise
	kInt               // bigint
	kNInt              // bigint or NULL
	kBool              // boolean
	kDate              // date
)

var arrayType = map[kind]string{
	kText: "text[]", kNText: "text[]", kTime: "timestamptz[]", kJSON: "text[]", kJSONB: "text[]",
	kInt: "bigint[]", kNInt: "bigint[]", kBool: "boolean[]", kDate: "date[]",
}

type column struct {
	name string
	kind kind
}

// rowset gathers rows column by column and writes them in one statement
// (INSERT … SELECT FROM unnest(arrays)), the set-based write that lets a
// projection apply thousands of events per transaction.
type rowset struct {
	cols []column
	data []colData
	next int
	n    int
}

// colData holds a column's values in slices pgx encodes without reflection
// where it can: NULL travels as a value the statement turns back into NULL
// ("" for text and JSON, the zero time for timestamps), which costs nothing
// where slices of pgtype values cost a reflected, boxed value per element.
// A nullable bigint has no value free to stand for NULL and stays a
// pgtype.Int8 (few columns are).
type colData struct {
	s  []string    // kText, kNText, kJSON, kJSONB
	t  []time.Time // kTime, kDate
	i  []int64
	ni []pgtype.Int8
	b  []bool
}

func newRowset(cols ...column) *rowset {
	return &rowset{cols: cols, data: make([]colData, len(cols))}
}

// col returns the next column's data, checking the caller feeds the kind it
// declared (a mismatch is a programming error, caught by any test).
func (r *rowset) col(k kind) *colData {
	if r.next == len(r.cols) {
		r.next, r.n = 0, r.n+1
	}
	c := r.cols[r.next]
	if c.kind != k {
		panic(fmt.Sprintf("models: column %q fed the wrong kind", c.name))
	}
	r.next++
	return &r.data[r.next-1]
}

func (r *rowset) text(v string) *rowset { c := r.col(kText); c.s = append(c.s, v); return r }
func (r *rowset) ntext(v string) *rowset {
	c := r.col(kNText)
	c.s = append(c.s, v)
	return r
}
func (r *rowset) time(v time.Time) *rowset {
	c := r.col(kTime)
	c.t = append(c.t, v) // a zero time in any location is the same instant: NULL
	return r
}
func (r *rowset) json(v []byte) *rowset { return r.jsonKind(kJSON, v) }

func (r *rowset) jsonKind(k kind, v []byte) *rowset {
	c := r.col(k)
	if len(v) == 0 || string(v) == "null" {
		c.s = append(c.s, "")
	} else {
		c.s = append(c.s, string(v))
	}
	return r
}

// jsonbOf marshals v for a jsonb column.
func (r *rowset) jsonbOf(v any) *rowset {
	b, err := json.Marshal(v)
	if err != nil {
		b = nil
	}
	return r.jsonKind(kJSONB, b)
}

// jsonOf marshals v for a jsonb column (maps marshal with sorted keys, so
// rebuilds write the same bytes).
func (r *rowset) jsonOf(v any) *rowset {
	b, err := json.Marshal(v)
	if err != nil {
		b = nil
	}
	return r.json(b)
}
func (r *rowset) int(v int64) *rowset { c := r.col(kInt); c.i = append(c.i, v); return r }
func (r *rowset) nint(v int64, ok bool) *rowset {
	c := r.col(kNInt)
	c.ni = append(c.ni, pgtype.Int8{Int64: v, Valid: ok})
	return r
}
func (r *rowset) bool(v bool) *rowset      { c := r.col(kBool); c.b = append(c.b, v); return r }
func (r *rowset) date(v time.Time) *rowset { c := r.col(kDate); c.t = append(c.t, v); return r }

func (r *rowset) len() int {
	if r.next == 0 {
		return r.n
	}
	return r.n + 1
}

func (r *rowset) args() []any {
	out := make([]any, len(r.cols))
	for i, c := range r.cols {
		d := &r.data[i]
		switch c.kind {
		case kText, kNText, kJSON, kJSONB:
			out[i] = d.s
		case kTime, kDate:
			out[i] = d.t
		case kInt:
			out[i] = d.i
		case kNInt:
			out[i] = d.ni
		case kBool:
			out[i] = d.b
		}
	}
	return out
}

// zeroTime is Go's zero time as PostgreSQL reads it: a kTime column's NULL.
const zeroTime = "'0001-01-01 00:00:00+00'::timestamptz"

// selectSQL is "SELECT <exprs> FROM unnest($1::type[], …) AS u(<cols>)".
func (r *rowset) selectSQL() (names string, sel string) {
	var ns, exprs, params []string
	for i, c := range r.cols {
		ns = append(ns, c.name)
		e := "u." + c.name
		switch c.kind {
		case kNText:
			e = "NULLIF(" + e + ", '') AS " + c.name
		case kJSON:
			e = "NULLIF(" + e + ", '')::json AS " + c.name
		case kJSONB:
			e = "NULLIF(" + e + ", '')::jsonb AS " + c.name
		case kTime:
			e = "NULLIF(" + e + ", " + zeroTime + ") AS " + c.name
		}
		exprs = append(exprs, e)
		params = append(params, fmt.Sprintf("$%d::%s", i+1, arrayType[c.kind]))
	}
	names = strings.Join(ns, ", ")
	return names, "SELECT " + strings.Join(exprs, ", ") + " FROM unnest(" + strings.Join(params, ", ") + ") AS u(" + names + ")"
}

// stmt is one parametrised statement of an Apply's writes.
type stmt struct {
	sql  string
	args []any
}

// insert is the statement writing the rows into table (none if no rows).
func (r *rowset) insert(table string) []stmt {
	if r.len() == 0 {
		return nil
	}
	names, sel := r.selectSQL()
	return []stmt{{"INSERT INTO " + table + " (" + names + ") " + sel, r.args()}}
}

// update is the statement replacing the rows of table with the same key.
func (r *rowset) update(table string, key []string) []stmt {
	if r.len() == 0 {
		return nil
	}
	_, sel := r.selectSQL()
	var set, match []string
	for _, c := range r.cols {
		if contains(key, c.name) {
			match = append(match, "t."+c.name+" = v."+c.name)
		} else {
			set = append(set, c.name+" = v."+c.name)
		}
	}
	return []stmt{{"UPDATE " + table + " AS t SET " + strings.Join(set, ", ") + " FROM (" + sel + ") AS v WHERE " +
		strings.Join(match, " AND "), r.args()}}
}

// upsert is the statement writing the rows into table, replacing rows with
// the same key; set gives the assignments for a conflict.
func (r *rowset) upsert(table string, key []string, set string) []stmt {
	if r.len() == 0 {
		return nil
	}
	names, sel := r.selectSQL()
	return []stmt{{"INSERT INTO " + table + " AS t (" + names + ") " + sel +
		" ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + set, r.args()}}
}

// split gathers the rows of entities folded from events: those that
// existed before the batch are updated, the others inserted; each is
// cheaper than INSERT … ON CONFLICT for both.
type split struct{ ins, upd *rowset }

func newSplit(cols ...column) split { return split{ins: newRowset(cols...), upd: newRowset(cols...)} }

// row returns the rowset the next row of an entity goes to.
func (s split) row(existed bool) *rowset {
	if existed {
		return s.upd
	}
	return s.ins
}

func (s split) writes(table string, key ...string) []stmt {
	return append(s.ins.insert(table), s.upd.update(table, key)...)
}

var placeholder = regexp.MustCompile(`\$(\d+)`)

// write runs an Apply's statements as one, each a data-modifying CTE: one
// round trip, which keeps a batch's transaction (and the time it holds back
// readers of the log) short.
func write(ctx context.Context, tx pgx.Tx, stmts ...stmt) error {
	switch len(stmts) {
	case 0:
		return nil
	case 1:
		_, err := tx.Exec(ctx, stmts[0].sql, stmts[0].args...)
		return err
	}
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	for i, s := range stmts {
		offset := len(args)
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "w%d AS (", i)
		b.WriteString(placeholder.ReplaceAllStringFunc(s.sql, func(m string) string {
			n, _ := strconv.Atoi(m[1:])
			return "$" + strconv.Itoa(n+offset)
		}))
		b.WriteString(")")
		args = append(args, s.args...)
	}
	b.WriteString(" SELECT 1")
	if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("write read models: %w", err)
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// ts reads a nullable timestamp as a zero time for NULL, in UTC.
func ts(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}
