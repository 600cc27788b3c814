package tenant

import (
	"slices"
	"time"

	"cairn/domain"
)

const userEntity = "user"

// UserStatus is where a user is in its life.
type UserStatus string

const (
	UserStatusActive   UserStatus = "active"
	UserStatusDisabled UserStatus = "disabled" // may not act; tokens stop working
)

// UserStatuses lists every user status.
var UserStatuses = []UserStatus{UserStatusActive, UserStatusDisabled}

// User commands, as the allowed-commands table and state errors spell them.
const (
	CmdCreateUser  = "create"
	CmdDisableUser = "disable"
	CmdEnableUser  = "enable"
)

// UserCommands lists every user command.
var UserCommands = []string{CmdCreateUser, CmdDisableUser, CmdEnableUser}

// UserAllowed lists the commands an existing user accepts in each status;
// create is accepted only by a user that does not exist yet.
var UserAllowed = map[UserStatus][]string{
	UserStatusActive:   {CmdDisableUser},
	UserStatusDisabled: {CmdEnableUser},
}

// UserAllowedCommands returns the commands a user in status s accepts.
func UserAllowedCommands(s UserStatus) []string { return slices.Clone(UserAllowed[s]) }

// User is the state of one user, folded from its events.
type User struct {
	ID            string
	Name          string
	Role          Role
	TenantID      string // for tenant roles only
	Status        UserStatus
	DisableReason string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Exists reports whether the user has been created.
func (u User) Exists() bool { return u.Status != "" }

// Active reports whether the user may act.
func (u User) Active() bool { return u.Status == UserStatusActive }

// AllowedCommands returns the commands this user accepts now.
func (u User) AllowedCommands() []string {
	if !u.Exists() {
		return []string{CmdCreateUser}
	}
	return UserAllowedCommands(u.Status)
}

// Apply folds one event into the state; others are ignored.
func (u *User) Apply(e domain.Event) {
	switch e := e.(type) {
	case UserCreated:
		*u = User{ID: e.UserID, Name: e.Name, Role: e.Role, TenantID: e.TenantID,
			Status: UserStatusActive, CreatedAt: e.At, UpdatedAt: e.At}
	case UserDisabled:
		u.Status = UserStatusDisabled
		u.DisableReason = e.Reason
		u.UpdatedAt = e.At
	case UserEnabled:
		u.Status = UserStatusActive
		u.DisableReason = ""
		u.UpdatedAt = e.At
	}
}

// CreateUser creates a user with one role. Tenant roles need a tenant id;
// other roles must not have one.
type CreateUser struct {
	UserID   string
	Name     string
	Role     Role
	TenantID string
	At       time.Time
}

// DisableUser stops a user from acting.
type DisableUser struct {
	UserID string
	Reason string
	At     time.Time
}

// EnableUser lets a disabled user act again.
type EnableUser struct {
	UserID string
	At     time.Time
}

// Create decides the creation of a user that does not exist yet.
func (u User) Create(c CreateUser) ([]domain.Event, error) {
	if u.Exists() {
		return nil, u.refuse(CmdCreateUser)
	}
	if err := domain.FirstError(
		domain.ValidateID("userId", c.UserID),
		domain.ValidateName("name", c.Name, MaxNameLength),
		validateRoleAndTenant(c.Role, c.TenantID),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	return []domain.Event{UserCreated{UserID: c.UserID, Name: c.Name, Role: c.Role, TenantID: c.TenantID, At: c.At.UTC()}}, nil
}

// Disable disables an active user.
func (u User) Disable(c DisableUser) ([]domain.Event, error) {
	if err := u.admit(c.UserID, CmdDisableUser, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{UserDisabled{UserID: u.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

// Enable enables a disabled user.
func (u User) Enable(c EnableUser) ([]domain.Event, error) {
	if err := u.admit(c.UserID, CmdEnableUser, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{UserEnabled{UserID: u.ID, At: c.At.UTC()}}, nil
}

func (u User) admit(id, command string, at time.Time) error {
	return domain.Admit(userEntity, u.ID, u.Status, UserAllowed, "userId", id, command, at)
}

func (u User) refuse(command string) error {
	return &domain.StateError{Entity: userEntity, ID: u.ID, Command: command, State: string(u.Status)}
}
