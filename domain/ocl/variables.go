package ocl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ResolveVariables computes the value of every declared variable for one
// deployment. Each takes, in order of precedence, the caller's value, the
// flavor's override, or the default; a JSON null from the caller counts as
// not given. An optional variable with none of these is null. Values are
// checked against their variable's type and validation; unknown names, an
// unknown flavor and missing required variables are refused. Problems come
// back together as a *ValidationError with paths "variables.NAME".
//
// The result holds every declared variable in canonical JSON and is what Plan
// expects.
func (d *Descriptor) ResolveVariables(flavor string, given map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	var ps problems
	var fl Flavor
	if flavor != "" {
		f, ok := d.Flavors[flavor]
		if !ok {
			ps.add("flavor", "unknown flavor %q; %s", flavor, declared("flavors", sortedKeys(d.Flavors)))
		}
		fl = f
	}
	for _, name := range sortedKeys(given) {
		if _, ok := d.Variables[name]; !ok {
			ps.add(path("variables").key(name), "is not a variable of this descriptor; %s", declared("variables", sortedKeys(d.Variables)))
		}
	}
	out := make(map[string]json.RawMessage, len(d.Variables))
	for _, name := range sortedKeys(d.Variables) {
		def := d.Variables[name]
		p := path("variables").key(name)
		raw, from := given[name], ""
		if isAbsent(raw) {
			raw, from = fl.Variables[name], fmt.Sprintf(" (value of flavor %q)", flavor)
		}
		if isAbsent(raw) {
			raw, from = def.Default, " (the default)"
		}
		if isAbsent(raw) {
			if def.Required {
				ps.add(p, "is required; give a value")
				continue
			}
			out[name] = json.RawMessage("null")
			continue
		}
		v, err := decodeValue(raw)
		if err != nil {
			ps.add(p, "is not valid JSON%s: %v", from, err)
			continue
		}
		for _, msg := range checkValue(def, v) {
			ps.add(p, "%s%s", msg, from)
		}
		out[name] = encodeCanonical(v)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// RedactSensitive returns a copy of vars in which the values of sensitive
// variables are replaced by "(sensitive)", fit for events, logs and portals.
func (d *Descriptor) RedactSensitive(vars map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(vars))
	for k, v := range vars {
		if d.Variables[k].Sensitive {
			v = json.RawMessage(`"(sensitive)"`)
		}
		out[k] = v
	}
	return out
}

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || strings.TrimSpace(string(raw)) == "null"
}

func declared(what string, names []string) string {
	if len(names) == 0 {
		return "the descriptor declares no " + what
	}
	return "declared " + what + ": " + strings.Join(names, ", ")
}

// checkValue lists what is wrong with v as a value of def, in words for the
// user; nil means the value is acceptable.
func checkValue(def Variable, v any) []string {
	if msg := checkType(def.Type, v); msg != "" {
		return []string{msg}
	}
	val := def.Validation
	if val == nil {
		return nil
	}
	var out []string
	if s, ok := v.(string); ok {
		if val.Pattern != "" {
			// An invalid pattern is reported once, on the pattern itself.
			if re, err := regexp.Compile(val.Pattern); err == nil && !re.MatchString(s) {
				out = append(out, fmt.Sprintf("must match the pattern %q", val.Pattern))
			}
		}
		n := utf8.RuneCountInString(s)
		if val.MinLength != nil && n < *val.MinLength {
			out = append(out, fmt.Sprintf("must be at least %s long, got %d", plural(*val.MinLength, "character"), n))
		}
		if val.MaxLength != nil && n > *val.MaxLength {
			out = append(out, fmt.Sprintf("must be at most %s long, got %d", plural(*val.MaxLength, "character"), n))
		}
	}
	if num, ok := v.(json.Number); ok {
		f, err := strconv.ParseFloat(string(num), 64)
		if err == nil {
			if val.Minimum != nil && f < *val.Minimum {
				out = append(out, "must be at least "+formatFloat(*val.Minimum))
			}
			if val.Maximum != nil && f > *val.Maximum {
				out = append(out, "must be at most "+formatFloat(*val.Maximum))
			}
		}
	}
	if len(val.Enum) > 0 && !inEnum(v, val.Enum) {
		want := make([]string, 0, len(val.Enum))
		for _, e := range val.Enum {
			if ev, err := decodeValue(e); err == nil {
				want = append(want, display(ev))
			}
		}
		out = append(out, "must be one of "+strings.Join(want, ", "))
	}
	return out
}

// checkType says how v fails to be of type t, or "" when it is.
func checkType(t VarType, v any) string {
	got := jsonType(v)
	ok := false
	switch t {
	case TypeString:
		ok = got == "string"
	case TypeNumber:
		ok = got == "number" || got == "integer"
	case TypeInteger:
		ok = got == "integer"
	case TypeBoolean:
		ok = got == "boolean"
	case TypeObject:
		ok = got == "object"
	case TypeArray:
		ok = got == "array"
	default:
		// An unknown type is a schema problem reported elsewhere.
		return ""
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("must be %s, got %s", withArticle(string(t)), got)
}

func inEnum(v any, enum []json.RawMessage) bool {
	want := string(encodeCanonical(v))
	for _, e := range enum {
		c, err := canonicalize(e)
		if err == nil && string(c) == want {
			return true
		}
	}
	return false
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func knownType(t VarType) bool {
	switch t {
	case TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeObject, TypeArray:
		return true
	}
	return false
}
