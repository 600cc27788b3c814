package tenant

import (
	"slices"
	"time"

	"cairn/domain"
)

const tenantEntity = "tenant"

// TenantStatus is where a tenant is in its life.
type TenantStatus string

const (
	TenantStatusActive    TenantStatus = "active"
	TenantStatusSuspended TenantStatus = "suspended" // its users may not act
)

// TenantStatuses lists every tenant status.
var TenantStatuses = []TenantStatus{TenantStatusActive, TenantStatusSuspended}

// Tenant commands, as the allowed-commands table and state errors spell them.
const (
	CmdCreateTenant  = "create"
	CmdRenameTenant  = "rename"
	CmdSuspendTenant = "suspend"
	CmdResumeTenant  = "resume"
)

// TenantCommands lists every tenant command.
var TenantCommands = []string{CmdCreateTenant, CmdRenameTenant, CmdSuspendTenant, CmdResumeTenant}

// TenantAllowed lists the commands an existing tenant accepts in each status;
// create is accepted only by a tenant that does not exist yet. Renaming to the
// current name decides nothing.
var TenantAllowed = map[TenantStatus][]string{
	TenantStatusActive:    {CmdRenameTenant, CmdSuspendTenant},
	TenantStatusSuspended: {CmdRenameTenant, CmdResumeTenant},
}

// TenantAllowedCommands returns the commands a tenant in status s accepts.
func TenantAllowedCommands(s TenantStatus) []string { return slices.Clone(TenantAllowed[s]) }

// Tenant is the state of one tenant, folded from its events.
type Tenant struct {
	ID            string
	Name          string
	Status        TenantStatus
	SuspendReason string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Exists reports whether the tenant has been created.
func (t Tenant) Exists() bool { return t.Status != "" }

// AllowedCommands returns the commands this tenant accepts now.
func (t Tenant) AllowedCommands() []string {
	if !t.Exists() {
		return []string{CmdCreateTenant}
	}
	return TenantAllowedCommands(t.Status)
}

// Apply folds one event into the state; others are ignored.
func (t *Tenant) Apply(e domain.Event) {
	switch e := e.(type) {
	case TenantCreated:
		*t = Tenant{ID: e.TenantID, Name: e.Name, Status: TenantStatusActive, CreatedAt: e.At, UpdatedAt: e.At}
	case TenantRenamed:
		t.Name = e.Name
		t.UpdatedAt = e.At
	case TenantSuspended:
		t.Status = TenantStatusSuspended
		t.SuspendReason = e.Reason
		t.UpdatedAt = e.At
	case TenantResumed:
		t.Status = TenantStatusActive
		t.SuspendReason = ""
		t.UpdatedAt = e.At
	}
}

// CreateTenant creates a tenant.
type CreateTenant struct {
	TenantID string
	Name     string
	At       time.Time
}

// RenameTenant changes a tenant's display name.
type RenameTenant struct {
	TenantID string
	Name     string
	At       time.Time
}

// SuspendTenant stops a tenant's users from acting; its services keep running.
type SuspendTenant struct {
	TenantID string
	Reason   string
	At       time.Time
}

// ResumeTenant lifts a suspension.
type ResumeTenant struct {
	TenantID string
	At       time.Time
}

// Create decides the creation of a tenant that does not exist yet.
func (t Tenant) Create(c CreateTenant) ([]domain.Event, error) {
	if t.Exists() {
		return nil, t.refuse(CmdCreateTenant)
	}
	if err := domain.FirstError(domain.ValidateID("tenantId", c.TenantID), domain.ValidateName("name", c.Name, MaxNameLength), domain.ValidateAt(c.At)); err != nil {
		return nil, err
	}
	return []domain.Event{TenantCreated{TenantID: c.TenantID, Name: c.Name, At: c.At.UTC()}}, nil
}

// Rename renames the tenant; the same name decides nothing.
func (t Tenant) Rename(c RenameTenant) ([]domain.Event, error) {
	if err := t.admit(c.TenantID, CmdRenameTenant, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateName("name", c.Name, MaxNameLength); err != nil {
		return nil, err
	}
	if c.Name == t.Name {
		return nil, nil
	}
	return []domain.Event{TenantRenamed{TenantID: t.ID, Name: c.Name, At: c.At.UTC()}}, nil
}

// Suspend suspends an active tenant.
func (t Tenant) Suspend(c SuspendTenant) ([]domain.Event, error) {
	if err := t.admit(c.TenantID, CmdSuspendTenant, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{TenantSuspended{TenantID: t.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

// Resume reactivates a suspended tenant.
func (t Tenant) Resume(c ResumeTenant) ([]domain.Event, error) {
	if err := t.admit(c.TenantID, CmdResumeTenant, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{TenantResumed{TenantID: t.ID, At: c.At.UTC()}}, nil
}

func (t Tenant) admit(id, command string, at time.Time) error {
	return domain.Admit(tenantEntity, t.ID, t.Status, TenantAllowed, "tenantId", id, command, at)
}

func (t Tenant) refuse(command string) error {
	return &domain.StateError{Entity: tenantEntity, ID: t.ID, Command: command, State: string(t.Status)}
}
