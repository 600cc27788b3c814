package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed five-field cron expression ("minute hour day-of-month
// month day-of-week"), evaluated in UTC so that a schedule fires at the same
// instants whichever server evaluates it.
//
// Each field takes "*", a number, a range "a-b", a step "*/n", "a-b/n" or
// "a/n", or a comma-separated list of those; months and weekdays also take
// their English three-letter names, and weekday 7 is Sunday like 0. The
// descriptors @yearly (@annually), @monthly, @weekly, @daily (@midnight) and
// @hourly stand for their usual expressions. As in Vixie cron, when both the
// day of month and the day of week are restricted a day matching either one
// fires.
type Cron struct {
	expr                          string
	minute, hour, dom, month, dow uint64 // bit i set: value i allowed
	domRestricted, dowRestricted  bool
}

// maxSearch bounds the search for the next firing: an expression that does
// not fire within it (February 30th) is refused when parsed.
const maxSearch = 5 * 366 * 24 * time.Hour

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var monthNames = map[string]int{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}

var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var cronFields = [5]cronField{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, monthNames},
	{"day of week", 0, 7, dayNames},
}

// CronError explains why an expression is not a valid cron expression.
type CronError struct {
	Expr   string
	Reason string
}

func (e *CronError) Error() string {
	return fmt.Sprintf("cron expression %q: %s", e.Expr, e.Reason)
}

// ParseCron parses a cron expression.
func ParseCron(expr string) (Cron, error) {
	c := Cron{expr: expr}
	fail := func(format string, args ...any) (Cron, error) {
		return Cron{}, &CronError{Expr: expr, Reason: fmt.Sprintf(format, args...)}
	}
	spec := strings.TrimSpace(expr)
	if strings.HasPrefix(spec, "@") {
		d, ok := descriptors[strings.ToLower(spec)]
		if !ok {
			return fail("unknown descriptor %s; use @yearly, @monthly, @weekly, @daily or @hourly", spec)
		}
		spec = d
	}
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return fail("has %d fields; want 5: minute hour day-of-month month day-of-week", len(parts))
	}
	sets := [5]*uint64{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, part := range parts {
		bits, err := parseField(part, cronFields[i])
		if err != nil {
			return fail("%s", err)
		}
		*sets[i] = bits
	}
	// Sunday is 0 and 7.
	if c.dow&(1<<7) != 0 {
		c.dow |= 1
	}
	c.domRestricted = parts[2] != "*" && !strings.HasPrefix(parts[2], "*/")
	c.dowRestricted = parts[4] != "*" && !strings.HasPrefix(parts[4], "*/")
	if c.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return fail("never fires (no such day)")
	}
	return c, nil
}

func parseField(s string, f cronField) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(s, ",") {
		if item == "" {
			return 0, fmt.Errorf("%s field %q has an empty list item", f.name, s)
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("%s field: step %q must be a positive number", f.name, stepText)
			}
			step = n
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, err
			}
			if hi, err = value(b, f); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("%s field: range %q runs backwards", f.name, rng)
			}
		default:
			v, err := value(rng, f)
			if err != nil {
				return 0, err
			}
			lo = v
			if !hasStep {
				hi = v // "a/n" runs from a to the end; plain "a" is a itself
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

func value(s string, f cronField) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s field: %q is not a number", f.name, s)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%s field: %d is outside %d-%d", f.name, v, f.min, f.max)
	}
	return v, nil
}

// String returns the expression as it was parsed.
func (c Cron) String() string { return c.expr }

// Next returns the first instant strictly after after (whole minutes, UTC)
// that the expression matches, or the zero time if there is none within five
// years.
func (c Cron) Next(after time.Time) time.Time {
	t := after.UTC().Truncate(time.Minute).Add(time.Minute)
	limit := t.Add(maxSearch)
	for t.Before(limit) {
		switch {
		case c.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<uint(t.Hour())) == 0:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
		case c.minute&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

func (c Cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	if c.domRestricted && c.dowRestricted {
		return dom || dow
	}
	return dom && dow
}
