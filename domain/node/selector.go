package node

import (
	"fmt"
	"slices"
	"strings"

	"cairn/domain"
)

// Operator is how a requirement tests one label.
type Operator string

// The set-based operators, as Kubernetes' label selectors spell them.
const (
	OpEquals    Operator = "="
	OpNotEquals Operator = "!="
	OpIn        Operator = "in"
	OpNotIn     Operator = "notin"
	OpExists    Operator = "exists"
	OpNotExists Operator = "!exists"
)

// Operators lists every operator.
var Operators = []Operator{OpEquals, OpNotEquals, OpIn, OpNotIn, OpExists, OpNotExists}

// MaxRequirements bounds one selector, and MaxSelectorValues the values of
// one requirement: a selector is read for every node on every decision.
const (
	MaxRequirements   = 32
	MaxSelectorValues = 64
)

// Requirement is one test of a node's labels.
type Requirement struct {
	Key    string   `json:"key"`
	Op     Operator `json:"op"`
	Values []string `json:"values,omitempty"`
}

// Selector selects the nodes that meet every requirement; an empty one
// selects every node.
type Selector []Requirement

// Matches reports whether labels meet the requirement. A node without the
// key fails "=" and "in" and passes "!=" and "notin", as in Kubernetes.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Op {
	case OpEquals:
		return ok && len(r.Values) == 1 && v == r.Values[0]
	case OpNotEquals:
		return !ok || len(r.Values) != 1 || v != r.Values[0]
	case OpIn:
		return ok && slices.Contains(r.Values, v)
	case OpNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case OpExists:
		return ok
	case OpNotExists:
		return !ok
	}
	return false
}

// Matches reports whether labels meet every requirement.
func (s Selector) Matches(labels map[string]string) bool {
	for _, r := range s {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

// String writes the selector in the syntax Parse reads.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

func (r Requirement) String() string {
	switch r.Op {
	case OpEquals, OpNotEquals:
		return r.Key + string(r.Op) + strings.Join(r.Values, "")
	case OpIn, OpNotIn:
		return r.Key + " " + string(r.Op) + " (" + strings.Join(r.Values, ",") + ")"
	case OpExists:
		return r.Key
	case OpNotExists:
		return "!" + r.Key
	}
	return r.Key + " " + string(r.Op)
}

// SelectorOf turns an equality map (the older form of a selector) into
// requirements, in key order.
func SelectorOf(labels map[string]string) Selector {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(Selector, 0, len(keys))
	for _, k := range keys {
		out = append(out, Requirement{Key: k, Op: OpEquals, Values: []string{labels[k]}})
	}
	return out
}

// Validate checks every requirement; field names the selector in errors,
// with the requirement's index.
func (s Selector) Validate(field string) error {
	if len(s) > MaxRequirements {
		return domain.Invalid(field, fmt.Sprintf("has %d requirements, more than the %d allowed", len(s), MaxRequirements))
	}
	for i, r := range s {
		if err := r.validate(fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

func (r Requirement) validate(field string) error {
	if err := ValidateLabels(field+".key", map[string]string{r.Key: ""}); err != nil || r.Key == "" {
		if r.Key == "" {
			return domain.Invalid(field+".key", "is required")
		}
		return err
	}
	want := -1 // any number of values, at least one
	switch r.Op {
	case OpEquals, OpNotEquals:
		want = 1
	case OpIn, OpNotIn:
	case OpExists, OpNotExists:
		want = 0
	default:
		ops := make([]string, len(Operators))
		for i, o := range Operators {
			ops[i] = fmt.Sprintf("%q", o)
		}
		return domain.Invalid(field+".op", fmt.Sprintf("unknown operator %q: use one of %s", r.Op, strings.Join(ops, ", ")))
	}
	switch {
	case want == 0 && len(r.Values) > 0:
		return domain.Invalid(field+".values", fmt.Sprintf("%q takes no values", r.Op))
	case want == 1 && len(r.Values) != 1:
		return domain.Invalid(field+".values", fmt.Sprintf("%q takes exactly one value, not %d", r.Op, len(r.Values)))
	case want == -1 && len(r.Values) == 0:
		return domain.Invalid(field+".values", fmt.Sprintf("%q needs at least one value", r.Op))
	case len(r.Values) > MaxSelectorValues:
		return domain.Invalid(field+".values", fmt.Sprintf("has %d values, more than the %d allowed", len(r.Values), MaxSelectorValues))
	}
	for _, v := range r.Values {
		if err := ValidateLabels(field+".values", map[string]string{r.Key: v}); err != nil {
			return err
		}
	}
	return nil
}

// ParseSelector reads a selector written as Kubernetes writes them:
// requirements separated by commas, each one of
//
//	key=value  key==value  key!=value  key in (a,b)  key notin (a,b)  key  !key
//
// The result is validated. An empty string selects every node.
func ParseSelector(s string) (Selector, error) {
	const field = "selector"
	if len(s) > MaxRequirements*(2*MaxLabelLength+16) {
		return nil, domain.Invalid(field, "is too long")
	}
	var out Selector
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range splitTopLevel(s) {
		part = strings.TrimSpace(part)
		r, err := parseRequirement(part)
		if err != nil {
			return nil, domain.Invalid(field, fmt.Sprintf("requirement %d (%q): %v", len(out)+1, part, err))
		}
		out = append(out, r)
		if len(out) > MaxRequirements {
			return nil, domain.Invalid(field, fmt.Sprintf("more than the %d requirements allowed", MaxRequirements))
		}
	}
	if err := out.Validate(field); err != nil {
		return nil, err
	}
	return out, nil
}

// splitTopLevel splits at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var parts []string
	depth, from := 0, 0
	for i, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth <= 0:
			parts = append(parts, s[from:i])
			from = i + 1
		}
	}
	return append(parts, s[from:])
}

func parseRequirement(p string) (Requirement, error) {
	if p == "" {
		return Requirement{}, fmt.Errorf("is empty")
	}
	if strings.HasPrefix(p, "!") && !strings.ContainsAny(p, "=()") {
		return Requirement{Key: strings.TrimSpace(p[1:]), Op: OpNotExists}, nil
	}
	if i := strings.Index(p, "!="); i >= 0 {
		return Requirement{Key: strings.TrimSpace(p[:i]), Op: OpNotEquals, Values: []string{strings.TrimSpace(p[i+2:])}}, nil
	}
	if i := strings.Index(p, "=="); i >= 0 {
		return Requirement{Key: strings.TrimSpace(p[:i]), Op: OpEquals, Values: []string{strings.TrimSpace(p[i+2:])}}, nil
	}
	if i := strings.Index(p, "="); i >= 0 {
		return Requirement{Key: strings.TrimSpace(p[:i]), Op: OpEquals, Values: []string{strings.TrimSpace(p[i+1:])}}, nil
	}
	fields := strings.Fields(p)
	if len(fields) == 1 && !strings.ContainsAny(p, "()") {
		return Requirement{Key: fields[0], Op: OpExists}, nil
	}
	if len(fields) < 2 {
		return Requirement{}, fmt.Errorf("use key=value, key!=value, key in (a,b), key notin (a,b), key or !key")
	}
	op := Operator(fields[1])
	if op != OpIn && op != OpNotIn {
		return Requirement{}, fmt.Errorf("unknown operator %q: use =, !=, in, notin, or a bare key (exists) or !key", fields[1])
	}
	list := strings.TrimSpace(strings.Join(fields[2:], " "))
	if !strings.HasPrefix(list, "(") || !strings.HasSuffix(list, ")") {
		return Requirement{}, fmt.Errorf("%s needs a list in parentheses, e.g. %s %s (a,b)", op, fields[0], op)
	}
	var values []string
	for _, v := range strings.Split(list[1:len(list)-1], ",") {
		if v = strings.TrimSpace(v); v != "" {
			values = append(values, v)
		}
	}
	return Requirement{Key: fields[0], Op: op, Values: values}, nil
}
