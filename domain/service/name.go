package service

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"cairn/domain"
)

// A service's name is unique within its tenant. The name's own stream
// records which service holds it; a registration claims the name in the
// same append as the service's first event, at the version of the name's
// stream it read, so two registrations of one name cannot both win. A name
// whose holder was removed is free again.

// NameClaimed records that a service holds a name within its tenant.
type NameClaimed struct {
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	ServiceID string    `json:"serviceId"`
	At        time.Time `json:"at"`
}

func (NameClaimed) EventType() string { return "service.name_claimed" }

// RegisterNameEvents registers the events of the name claims (their own
// aggregate, beside the service's).
func RegisterNameEvents(r *domain.Registry) {
	domain.Register[NameClaimed](r, 1)
}

// NameClaim is a tenant's service name and the service holding it.
type NameClaim struct {
	TenantID, Name, ServiceID string
}

// Apply folds the claims of one name.
func (n *NameClaim) Apply(e domain.Event) {
	if c, ok := e.(NameClaimed); ok {
		n.TenantID, n.Name, n.ServiceID = c.TenantID, c.Name, c.ServiceID
	}
}

// NameClaimID is the id of the stream of a name within a tenant.
func NameClaimID(tenantID, name string) string {
	sum := sha256.Sum256([]byte(tenantID + "\x00" + name))
	return hex.EncodeToString(sum[:16])
}

// NameTakenError refuses a second service of a name within a tenant.
type NameTakenError struct {
	TenantID, Name, By string
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("tenant %s already has a service named %q (%s): choose another name, or update or remove that one", e.TenantID, e.Name, e.By)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *NameTakenError) Is(target error) bool { return target == domain.ErrConflict }

// Claim decides a registration's claim of the name; holder is the service
// that holds it now (zero when none does).
func (n NameClaim) Claim(tenantID, name, serviceID string, holder Service, at time.Time) ([]domain.Event, error) {
	if n.ServiceID != "" && n.ServiceID != serviceID && holder.Exists() && holder.Status != StatusRemoved {
		return nil, &NameTakenError{TenantID: tenantID, Name: name, By: n.ServiceID}
	}
	if n.ServiceID == serviceID {
		return nil, nil
	}
	return []domain.Event{NameClaimed{TenantID: tenantID, Name: name, ServiceID: serviceID, At: at.UTC()}}, nil
}
