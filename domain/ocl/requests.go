package ocl

import (
	"encoding/json"
	"strings"

	"cairn/domain"
	"cairn/domain/node"
	"cairn/domain/placement"
)

// PlannedRequests are a resource instance's requests with variables
// substituted; nil amounts take the resource type's defaults.
type PlannedRequests struct {
	CPUMillis   *int64 `json:"cpuMillis,omitempty"`
	MemoryBytes *int64 `json:"memoryBytes,omitempty"`
	DiskBytes   *int64 `json:"diskBytes,omitempty"`
}

// Or fills the amounts not given from defaults.
func (r *PlannedRequests) Or(defaults placement.Resources) placement.Resources {
	out := defaults
	if r == nil {
		return out
	}
	if r.CPUMillis != nil {
		out.CPUMillis = *r.CPUMillis
	}
	if r.MemoryBytes != nil {
		out.MemoryBytes = *r.MemoryBytes
	}
	if r.DiskBytes != nil {
		out.DiskBytes = *r.DiskBytes
	}
	return out
}

// request is one amount of Requests with the parser for its kind.
type request struct {
	name  string
	raw   json.RawMessage
	parse func(json.RawMessage) (int64, error)
	set   func(*PlannedRequests, int64)
}

func (r Requests) fields() []request {
	return []request{
		{"cpu", r.CPU, placement.ParseCPU, func(p *PlannedRequests, v int64) { p.CPUMillis = &v }},
		{"memory", r.Memory, placement.ParseBytes, func(p *PlannedRequests, v int64) { p.MemoryBytes = &v }},
		{"disk", r.Disk, placement.ParseBytes, func(p *PlannedRequests, v int64) { p.DiskBytes = &v }},
	}
}

// jsonString returns raw's value when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// requests expands and parses a resource's requests for one instance.
func (pl *planner) requests(p path, rq *Requests, e *expansion) *PlannedRequests {
	out := &PlannedRequests{}
	for _, q := range rq.fields() {
		if len(q.raw) == 0 {
			continue
		}
		qp := p.key(q.name)
		raw := q.raw
		if s, ok := jsonString(raw); ok && strings.Contains(s, "$") {
			pe := &expansion{index: e.index, final: true}
			v := pl.expandString(qp, s, pe)
			e.sensitive = e.sensitive || pe.sensitive
			b, err := json.Marshal(v)
			if err != nil {
				pl.ps.add(qp, "%v", err)
				continue
			}
			raw = b
		}
		v, err := q.parse(raw)
		if err != nil {
			pl.ps.add(qp, "%v", err)
			continue
		}
		q.set(out, v)
	}
	return out
}

// checkSelector reports a planned selector that does not parse.
func (pl *planner) checkSelector(p path, s string) {
	if _, err := node.ParseSelector(s); err != nil {
		pl.ps.add(p, "%s", domain.Reason(err))
	}
}
