package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"cairn/domain"
)

const entity = "template"

// Limits on a template version.
const (
	MaxDescriptorBytes = 1 << 20
	MaxReasonLength    = 1024
)

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`)
	versionPattern = regexp.MustCompile(`^[0-9A-Za-z]([0-9A-Za-z.+_-]{0,62}[0-9A-Za-z])?$`)
	digestPattern  = regexp.MustCompile(`^[a-z0-9]+:[0-9a-f]{32,128}$`)
)

// Register records a descriptor for a template version. The caller has parsed
// and validated it against the descriptor schema and computed Digest over its
// canonical form ("sha256:<hex>"); the domain does not parse descriptors. The
// descriptor is stored compacted.
type Register struct {
	Name       string
	Version    string
	Vendor     string
	Descriptor json.RawMessage
	Digest     string
	At         time.Time
}

// Publish makes a validated version deployable and freezes it.
type Publish struct {
	Name    string
	Version string
	At      time.Time
}

// Deprecate steers new deployments away from a published version.
type Deprecate struct {
	Name    string
	Version string
	Reason  string
	At      time.Time
}

// Register creates the version, or replaces the descriptor of a version that
// is not published yet. Registering the same digest again decides nothing; a
// different digest for a published or deprecated version is refused: publish
// a new version instead. Only the vendor that registered a version may
// register it again.
func (t TemplateVersion) Register(c Register) ([]domain.Event, error) {
	if err := domain.FirstError(
		ValidateName("name", c.Name),
		ValidateVersion("version", c.Version),
		domain.ValidateID("vendor", c.Vendor),
		validateDescriptor(c.Descriptor),
		validateDigest(c.Digest),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	if t.Exists() {
		if err := t.addressed(c.Name, c.Version); err != nil {
			return nil, err
		}
		if c.Vendor != t.Vendor {
			return nil, domain.Invalid("vendor", fmt.Sprintf("template %q belongs to vendor %q", t.ID(), t.Vendor))
		}
		if c.Digest == t.Digest {
			return nil, nil
		}
		if !slices.Contains(Allowed[t.Status], CmdRegister) {
			return nil, t.refuse(CmdRegister)
		}
	}
	return []domain.Event{Registered{
		Name: c.Name, Version: c.Version, Vendor: c.Vendor,
		Descriptor: domain.CanonicalJSON(c.Descriptor), Digest: c.Digest, At: c.At.UTC(),
	}}, nil
}

// Publish moves a validated version to published.
func (t TemplateVersion) Publish(c Publish) ([]domain.Event, error) {
	if err := t.admit(c.Name, c.Version, CmdPublish, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{Published{Name: t.Name, Version: t.Version, At: c.At.UTC()}}, nil
}

// Deprecate moves a published version to deprecated.
func (t TemplateVersion) Deprecate(c Deprecate) ([]domain.Event, error) {
	if err := t.admit(c.Name, c.Version, CmdDeprecate, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{Deprecated{Name: t.Name, Version: t.Version, Reason: c.Reason, At: c.At.UTC()}}, nil
}

// admit checks that the command addresses this existing version, is allowed
// in its status, and has a time.
func (t TemplateVersion) admit(name, version, command string, at time.Time) error {
	if !t.Exists() {
		return &domain.NotFoundError{Entity: entity, ID: ID(name, version)}
	}
	if err := t.addressed(name, version); err != nil {
		return err
	}
	if !slices.Contains(Allowed[t.Status], command) {
		return t.refuse(command)
	}
	return domain.ValidateAt(at)
}

func (t TemplateVersion) addressed(name, version string) error {
	if name != t.Name || version != t.Version {
		return domain.Invalid("version", fmt.Sprintf("addresses %q but the loaded template is %q", ID(name, version), t.ID()))
	}
	return nil
}

func (t TemplateVersion) refuse(command string) error {
	return &domain.StateError{Entity: entity, ID: t.ID(), Command: command, State: string(t.Status)}
}

// ValidateName checks a template name; field names the input in errors.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return domain.Invalid(field, "is required")
	case !namePattern.MatchString(name):
		return domain.Invalid(field, fmt.Sprintf("%q must be at most 63 characters of a-z, 0-9, '-', '_', '.', starting and ending with a letter or digit", name))
	}
	return nil
}

// ValidateVersion checks a template version; field names the input in errors.
func ValidateVersion(field, version string) error {
	switch {
	case version == "":
		return domain.Invalid(field, "is required")
	case !versionPattern.MatchString(version):
		return domain.Invalid(field, fmt.Sprintf("%q must be at most 64 characters of letters, digits, '.', '+', '_', '-', e.g. \"1.2.0\"", version))
	}
	return nil
}

func validateDescriptor(d json.RawMessage) error {
	switch {
	case len(d) == 0:
		return domain.Invalid("descriptor", "is required")
	case len(d) > MaxDescriptorBytes:
		return domain.Invalid("descriptor", fmt.Sprintf("must be at most %d bytes", MaxDescriptorBytes))
	case !json.Valid(d):
		return domain.Invalid("descriptor", "must be valid JSON")
	case bytes.TrimLeft(d, " \t\r\n")[0] != '{':
		return domain.Invalid("descriptor", "must be a JSON object")
	}
	return nil
}

func validateDigest(digest string) error {
	switch {
	case digest == "":
		return domain.Invalid("digest", "is required")
	case !digestPattern.MatchString(digest):
		return domain.Invalid("digest", fmt.Sprintf("%q must be \"<algorithm>:<lower-case hex>\", e.g. \"sha256:…\"", digest))
	}
	return nil
}
