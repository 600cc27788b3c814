package ocl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Action is what changing a service from one plan to another does to one
// resource instance.
type Action string

const (
	ActionKeep    Action = "keep"    // nothing changes
	ActionCreate  Action = "create"  // new in the plan
	ActionUpdate  Action = "update"  // changed in place by its plugin
	ActionReplace Action = "replace" // destroyed, then created again
	ActionDestroy Action = "destroy" // gone from the plan
)

// Actions lists every action.
var Actions = []Action{ActionKeep, ActionCreate, ActionUpdate, ActionReplace, ActionDestroy}

// Masked stands for a value that holds a sensitive variable.
const Masked = `"(sensitive)"`

// PropertyChange is one property that differs between two plans. Path is
// dotted ("env.PORT"); Old or New is nil where the property is absent, and
// both are Masked in an instance that holds a sensitive value.
type PropertyChange struct {
	Path string          `json:"path"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// Change is what happens to one instance.
type Change struct {
	Name       string           `json:"name"`
	ResourceID string           `json:"resourceId"`
	Plugin     string           `json:"plugin"`
	Type       string           `json:"type"`
	Action     Action           `json:"action"`
	Reasons    []string         `json:"reasons,omitempty"`
	Properties []PropertyChange `json:"properties,omitempty"`
}

// Diff compares the plan a service has (from) with the one it is to have
// (to). The changes come in the order an update applies them: the
// instances of to in dependency order, then those only in from in reverse
// dependency order. inPlace says whether a plugin's type changes its
// resources in place; a change of any other is a replacement, as is a
// change of plugin, type, placement or requests. An instance whose
// properties are the same but that depends on one created, updated or
// replaced is updated too, since the outputs it reads may change.
func Diff(from, to *Graph, inPlace func(plugin, typ string) bool) []Change {
	changed := map[string]Action{}
	var out []Change
	for _, level := range to.Levels() {
		for _, name := range level {
			n, _ := to.Node(name)
			c := Change{Name: name, ResourceID: n.ResourceID, Plugin: n.Plugin, Type: n.Type, Action: ActionKeep}
			old, had := from.Node(name)
			switch {
			case !had:
				c.Action = ActionCreate
			case old.Plugin != n.Plugin || old.Type != n.Type:
				c.Action = ActionReplace
				c.Reasons = append(c.Reasons, fmt.Sprintf("%s %s becomes %s %s", old.Plugin, old.Type, n.Plugin, n.Type))
			default:
				c.Properties = propertyChanges(old, n)
				replace := !reflect.DeepEqual(old.Placement, n.Placement) || !reflect.DeepEqual(old.Requests, n.Requests)
				if replace {
					c.Reasons = append(c.Reasons, "its placement or requests change")
				}
				if len(c.Properties) > 0 {
					c.Reasons = append(c.Reasons, "its properties change")
				}
				for _, dep := range n.DependsOn {
					if a, ok := changed[dep]; ok {
						c.Reasons = append(c.Reasons, fmt.Sprintf("it depends on %s, which is %s", dep, pastTense(a)))
					}
				}
				switch {
				case replace, len(c.Reasons) > 0 && !inPlace(n.Plugin, n.Type):
					c.Action = ActionReplace
				case len(c.Reasons) > 0:
					c.Action = ActionUpdate
				}
			}
			if c.Action != ActionKeep {
				changed[name] = c.Action
			}
			out = append(out, c)
		}
	}
	for _, level := range from.ReverseLevels() {
		for _, name := range level {
			if _, kept := to.Node(name); kept {
				continue
			}
			n, _ := from.Node(name)
			out = append(out, Change{Name: name, ResourceID: n.ResourceID, Plugin: n.Plugin, Type: n.Type,
				Action: ActionDestroy, Reasons: []string{"it is not in the new plan"}})
		}
	}
	return out
}

func pastTense(a Action) string {
	switch a {
	case ActionCreate:
		return "created"
	case ActionUpdate:
		return "updated"
	case ActionReplace:
		return "replaced"
	}
	return string(a)
}

// propertyChanges lists the properties that differ, by dotted path, values
// masked where either instance holds a sensitive value.
func propertyChanges(old, n Node) []PropertyChange {
	var out []PropertyChange
	diffJSON("", old.Properties, n.Properties, &out)
	if old.Sensitive || n.Sensitive {
		for i := range out {
			if out[i].Old != nil {
				out[i].Old = json.RawMessage(Masked)
			}
			if out[i].New != nil {
				out[i].New = json.RawMessage(Masked)
			}
		}
	}
	return out
}

// diffJSON walks two JSON values: objects key by key, anything else as a
// whole.
func diffJSON(path string, a, b json.RawMessage, out *[]PropertyChange) {
	if bytes.Equal(a, b) {
		return
	}
	var ao, bo map[string]json.RawMessage
	aObj := len(a) > 0 && json.Unmarshal(a, &ao) == nil && ao != nil
	bObj := len(b) > 0 && json.Unmarshal(b, &bo) == nil && bo != nil
	if aObj && bObj {
		keys := slices.Sorted(maps.Keys(ao))
		for k := range bo {
			if _, ok := ao[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			diffJSON(joinPath(path, k), ao[k], bo[k], out)
		}
		return
	}
	if sameJSON(a, b) {
		return
	}
	if path == "" {
		path = "(all)"
	}
	*out = append(*out, PropertyChange{Path: path, Old: nilIfEmpty(a), New: nilIfEmpty(b)})
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var av, bv any
	if json.Unmarshal(a, &av) != nil || json.Unmarshal(b, &bv) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(av, bv)
}

func nilIfEmpty(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil
	}
	return raw
}
