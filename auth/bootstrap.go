package auth

import (
	"context"
	"errors"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/domain"
	"cairn/domain/tenant"
	"cairn/eventstore"
)

// The bootstrap's command ids. The event store answers "was this command
// run?" from an index, so the first start is recognised without replaying
// anything, and a second replica starting at the same moment, or a restart
// after a crash between the two steps, neither mints a second token nor
// leaves the admin without one.
const (
	bootstrapUserCommand  = "bootstrap:admin-user"
	bootstrapTokenCommand = "bootstrap:admin-token"
)

// BootstrapAdminID is the id of the user the first start creates.
const BootstrapAdminID = "admin"

// BootstrapAdmin makes sure the installation has an administrator: on the
// first start it creates the tenant-less admin user "admin" and issues it a
// token, which it returns for the server to print once. Later starts return
// "" and change nothing, even when that token was revoked since.
func BootstrapAdmin(ctx context.Context, h *access.Handlers) (string, error) {
	meta := commands.Meta{Actor: "cairnd", CorrelationID: "bootstrap"}
	meta.CommandID = bootstrapUserCommand
	_, err := h.CreateUser(ctx, meta, access.CreateUser{UserID: BootstrapAdminID, Name: "Administrator", Role: tenant.RoleAdmin})
	var exists *domain.StateError
	if err != nil && !errors.As(err, &exists) {
		return "", err
	}
	meta.CommandID = bootstrapTokenCommand
	tok, err := h.IssueToken(ctx, meta, access.IssueToken{UserID: BootstrapAdminID})
	var raced *eventstore.CommandReusedError
	if errors.As(err, &raced) {
		// Another replica issued it at the same moment (under a token id of
		// its own choosing) and prints it.
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return tok.Token, nil // empty when an earlier start issued it
}
