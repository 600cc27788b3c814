package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

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
	vendorPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
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
	if err := firstError(
		ValidateName("name", c.Name),
		ValidateVersion("version", c.Version),
		validateVendor(c.Vendor),
		validateDescriptor(c.Descriptor),
		validateDigest(c.Digest),
		validateAt(c.At),
	); err != nil {
		return nil, err
	}
	if t.Exists() {
		if err := t.addressed(c.Name, c.Version); err != nil {
			return nil, err
		}
		if c.Vendor != t.Vendor {
			return nil, invalid("vendor", fmt.Sprintf("template %q belongs to vendor %q", t.ID(), t.Vendor))
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
		Descriptor: canonical(c.Descriptor), Digest: c.Digest, At: c.At.UTC(),
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
	if err := validateText("reason", c.Reason, MaxReasonLength); err != nil {
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
	return validateAt(at)
}

func (t TemplateVersion) addressed(name, version string) error {
	if name != t.Name || version != t.Version {
		return invalid("version", fmt.Sprintf("addresses %q but the loaded template is %q", ID(name, version), t.ID()))
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
		return invalid(field, "is required")
	case !namePattern.MatchString(name):
		return invalid(field, fmt.Sprintf("%q must be at most 63 characters of a-z, 0-9, '-', '_', '.', starting and ending with a letter or digit", name))
	}
	return nil
}

// ValidateVersion checks a template version; field names the input in errors.
func ValidateVersion(field, version string) error {
	switch {
	case version == "":
		return invalid(field, "is required")
	case !versionPattern.MatchString(version):
		return invalid(field, fmt.Sprintf("%q must be at most 64 characters of letters, digits, '.', '+', '_', '-', e.g. \"1.2.0\"", version))
	}
	return nil
}

func validateVendor(vendor string) error {
	switch {
	case vendor == "":
		return invalid("vendor", "is required")
	case !vendorPattern.MatchString(vendor):
		return invalid("vendor", fmt.Sprintf("%q is not a valid vendor id", vendor))
	}
	return nil
}

func validateDescriptor(d json.RawMessage) error {
	switch {
	case len(d) == 0:
		return invalid("descriptor", "is required")
	case len(d) > MaxDescriptorBytes:
		return invalid("descriptor", fmt.Sprintf("must be at most %d bytes", MaxDescriptorBytes))
	case !json.Valid(d):
		return invalid("descriptor", "must be valid JSON")
	case bytes.TrimLeft(d, " \t\r\n")[0] != '{':
		return invalid("descriptor", "must be a JSON object")
	}
	return nil
}

func validateDigest(digest string) error {
	switch {
	case digest == "":
		return invalid("digest", "is required")
	case !digestPattern.MatchString(digest):
		return invalid("digest", fmt.Sprintf("%q must be \"<algorithm>:<lower-case hex>\", e.g. \"sha256:…\"", digest))
	}
	return nil
}

// canonical returns valid JSON as the event log stores it (compact, HTML
// characters escaped), so a decided event folds exactly like its stored copy.
func canonical(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	out, err := json.Marshal(raw)
	if err != nil {
		panic("template: canonical called on invalid JSON: " + err.Error())
	}
	return out
}

func validateAt(at time.Time) error {
	if at.IsZero() {
		return invalid("at", "is required")
	}
	return nil
}

func validateText(field, s string, maxLen int) error {
	if len(s) > maxLen {
		return invalid(field, fmt.Sprintf("must be at most %d bytes", maxLen))
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return invalid(field, "must not contain control characters")
		}
	}
	return nil
}

func invalid(field, reason string) error {
	return &domain.ValidationError{Field: field, Reason: reason}
}

// firstError returns the first failed check, in the order the command lists
// its fields.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
