// Package ocl reads, checks and plans Cairn service descriptors ("OCL").
//
// A descriptor is a JSON or YAML document (see docs/ocl.md and Schema) that a
// vendor publishes to the catalog. Parse turns it into a Descriptor, Validate
// reports every problem with the path of the offending field, ResolveVariables
// merges a tenant's values with flavors and defaults, and Plan expands it into
// the execution graph the orchestrator walks.
//
// The package is pure: no I/O, no clock, no randomness. Everything it derives
// (digests, resource ids, plans) is a function of its inputs only.
package ocl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// APIVersion is the only format version this package reads.
const APIVersion = "cairn/v1"

// Limits that keep a hostile or mistaken descriptor from exhausting memory in
// the control plane. They are part of the published format.
const (
	// MaxDocumentSize is the largest descriptor Parse accepts, in bytes.
	MaxDocumentSize = 1 << 20
	// MaxCount is the largest count a single resource may ask for.
	MaxCount = 256
	// MaxInstances bounds the nodes of one plan, all resources together.
	MaxInstances = 1024
	// maxDepth bounds nesting of JSON/YAML values; descriptors are shallow.
	maxDepth = 64
	// maxValues bounds the values in one document after YAML aliases are
	// expanded, which defuses "billion laughs" documents.
	maxValues = 200000
)

// VarType is the JSON type a variable's value must have.
type VarType string

// Variable types.
const (
	TypeString  VarType = "string"
	TypeNumber  VarType = "number"
	TypeInteger VarType = "integer"
	TypeBoolean VarType = "boolean"
	TypeObject  VarType = "object"
	TypeArray   VarType = "array"
)

// HealthCheckType says how a health check probes its resource.
type HealthCheckType string

// Health check types.
const (
	CheckProcess HealthCheckType = "process" // the resource's process runs
	CheckTCP     HealthCheckType = "tcp"
	CheckHTTP    HealthCheckType = "http"
	CheckCommand HealthCheckType = "command"
)

// Descriptor is a parsed service descriptor. Treat it as read-only: to change
// a descriptor, change the document and parse it again.
type Descriptor struct {
	APIVersion   string              `json:"apiVersion,omitempty"`
	Metadata     Metadata            `json:"metadata"`
	Variables    map[string]Variable `json:"variables,omitempty"`
	Flavors      map[string]Flavor   `json:"flavors,omitempty"`
	Resources    []Resource          `json:"resources,omitempty"`
	Outputs      map[string]Output   `json:"outputs,omitempty"`
	HealthChecks []HealthCheck       `json:"healthChecks,omitempty"`

	// source is the document as written, kept so that Validate can report
	// fields the struct has no place for (typos such as "dependOn").
	source any
	// parsedAs is the struct's JSON right after Parse; when the struct still
	// encodes to it, source is an accurate picture of the descriptor.
	parsedAs []byte
}

// Metadata identifies a descriptor in the catalog.
type Metadata struct {
	Name        string `json:"name,omitempty"`
	Version     string `json:"version,omitempty"`
	Category    string `json:"category,omitempty"`
	Vendor      string `json:"vendor,omitempty"`
	Description string `json:"description,omitempty"`
}

// Variable is an input the tenant (or a flavor) supplies.
type Variable struct {
	Type        VarType         `json:"type,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Description string          `json:"description,omitempty"`
	Sensitive   bool            `json:"sensitive,omitempty"`
	Validation  *Validation     `json:"validation,omitempty"`
}

// Validation constrains a variable's value beyond its type.
type Validation struct {
	Pattern   string            `json:"pattern,omitempty"`
	MinLength *int              `json:"minLength,omitempty"`
	MaxLength *int              `json:"maxLength,omitempty"`
	Minimum   *float64          `json:"minimum,omitempty"`
	Maximum   *float64          `json:"maximum,omitempty"`
	Enum      []json.RawMessage `json:"enum,omitempty"`
}

// Flavor is a named set of variable values, such as "small" or "ha".
type Flavor struct {
	Description string                     `json:"description,omitempty"`
	Variables   map[string]json.RawMessage `json:"variables,omitempty"`
}

// Resource is one piece of infrastructure a plugin manages for the service.
type Resource struct {
	Name       string          `json:"name,omitempty"`
	Plugin     string          `json:"plugin,omitempty"`
	Type       string          `json:"type,omitempty"`
	Properties json.RawMessage `json:"properties,omitempty"`
	DependsOn  []string        `json:"dependsOn,omitempty"`
	// Count is an integer or a "${var.NAME}" expression; absent means one
	// instance that is addressed without an index.
	Count     json.RawMessage `json:"count,omitempty"`
	Requests  *Requests       `json:"requests,omitempty"`
	Placement *Placement      `json:"placement,omitempty"`
}

// Requests are what one instance of a resource needs of its node. Each is
// a number or a string, and may be a "${var.NAME}" expression.
type Requests struct {
	CPU    json.RawMessage `json:"cpu,omitempty"`
	Memory json.RawMessage `json:"memory,omitempty"`
	Disk   json.RawMessage `json:"disk,omitempty"`
}

// Counted reports whether the resource declares a count, which makes its
// instances addressable only by index (name[0], name[1], ...).
func (r Resource) Counted() bool {
	return len(r.Count) > 0 && string(r.Count) != "null"
}

// Placement says where the agent plugin's scheduler may put a resource.
type Placement struct {
	Location string            `json:"location,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Selector holds set-based label requirements (see node.ParseSelector).
	Selector string `json:"selector,omitempty"`
	// Spread and Distinct are "node" or "location" (see placement.Ask).
	Spread   string `json:"spread,omitempty"`
	Distinct string `json:"distinct,omitempty"`
}

// Output is a value the service exposes once deployed.
type Output struct {
	Value       json.RawMessage `json:"value,omitempty"`
	Description string          `json:"description,omitempty"`
	Sensitive   bool            `json:"sensitive,omitempty"`
}

// HealthCheck probes a resource's instances once the service runs.
type HealthCheck struct {
	Name       string          `json:"name,omitempty"`
	Resource   string          `json:"resource,omitempty"`
	Type       HealthCheckType `json:"type,omitempty"`
	Properties json.RawMessage `json:"properties,omitempty"`
	// Interval and Timeout are Go durations such as "30s" or "1m30s".
	Interval string `json:"interval,omitempty"`
	Timeout  string `json:"timeout,omitempty"`
}

// Health check timing when a descriptor leaves it out.
const (
	DefaultCheckInterval = "30s"
	DefaultCheckTimeout  = "5s"
)

// CanonicalJSON encodes the descriptor with sorted keys, no insignificant
// whitespace and normalised numbers, so equal descriptors encode equally
// whether they were written in JSON or YAML.
func (d *Descriptor) CanonicalJSON() ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode descriptor: %w", err)
	}
	return canonicalize(raw)
}

// Digest is the hex SHA-256 of CanonicalJSON: the catalog's identity for a
// descriptor's content.
func (d *Descriptor) Digest() (string, error) {
	c, err := d.CanonicalJSON()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// SensitiveVariables lists, sorted, the variables whose values must not be
// shown or logged.
func (d *Descriptor) SensitiveVariables() []string {
	var out []string
	for _, name := range sortedKeys(d.Variables) {
		if d.Variables[name].Sensitive {
			out = append(out, name)
		}
	}
	return out
}

// ResourceID is the id a plugin sees for one instance of a resource: the first
// 16 bytes, in hex, of SHA-256 over the service id, a newline and the instance
// name ("web" or "web[2]"). Instance names never contain a newline, so two
// different pairs never hash the same input; being derived rather than drawn,
// the id is the same when a step is retried after a crash.
func ResourceID(serviceID, instance string) string {
	sum := sha256.Sum256([]byte(serviceID + "\n" + instance))
	return hex.EncodeToString(sum[:16])
}

// instanceName names one instance: "web" for an uncounted resource (index
// -1) and "web[2]" for a counted one.
func instanceName(resource string, index int) string {
	if index < 0 {
		return resource
	}
	return resource + "[" + strconv.Itoa(index) + "]"
}
