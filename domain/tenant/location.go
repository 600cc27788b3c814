package tenant

import (
	"slices"
	"time"

	"cairn/domain"
)

const locationEntity = "location"

// LocationStatus is where a location is in its life.
type LocationStatus string

const (
	LocationStatusActive  LocationStatus = "active"
	LocationStatusRetired LocationStatus = "retired" // takes no new nodes or services
)

// LocationStatuses lists every location status.
var LocationStatuses = []LocationStatus{LocationStatusActive, LocationStatusRetired}

// Location commands, as the allowed-commands table and state errors spell them.
const (
	CmdCreateLocation = "create"
	CmdUpdateLocation = "update"
	CmdRetireLocation = "retire"
)

// LocationCommands lists every location command.
var LocationCommands = []string{CmdCreateLocation, CmdUpdateLocation, CmdRetireLocation}

// LocationAllowed lists the commands an existing location accepts in each
// status; create is accepted only by a location that does not exist yet.
// Updating with the current name and description decides nothing.
var LocationAllowed = map[LocationStatus][]string{
	LocationStatusActive:  {CmdUpdateLocation, CmdRetireLocation},
	LocationStatusRetired: {},
}

// LocationAllowedCommands returns the commands a location in status s accepts.
func LocationAllowedCommands(s LocationStatus) []string { return slices.Clone(LocationAllowed[s]) }

// Location is the state of one location, folded from its events.
type Location struct {
	ID          string
	Name        string
	Description string
	Status      LocationStatus
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Exists reports whether the location has been created.
func (l Location) Exists() bool { return l.Status != "" }

// AllowedCommands returns the commands this location accepts now.
func (l Location) AllowedCommands() []string {
	if !l.Exists() {
		return []string{CmdCreateLocation}
	}
	return LocationAllowedCommands(l.Status)
}

// Apply folds one event into the state; others are ignored.
func (l *Location) Apply(e domain.Event) {
	switch e := e.(type) {
	case LocationCreated:
		*l = Location{ID: e.LocationID, Name: e.Name, Description: e.Description,
			Status: LocationStatusActive, CreatedAt: e.At, UpdatedAt: e.At}
	case LocationUpdated:
		l.Name = e.Name
		l.Description = e.Description
		l.UpdatedAt = e.At
	case LocationRetired:
		l.Status = LocationStatusRetired
		l.UpdatedAt = e.At
	}
}

// CreateLocation creates a location.
type CreateLocation struct {
	LocationID  string
	Name        string
	Description string
	At          time.Time
}

// UpdateLocation replaces a location's name and description.
type UpdateLocation struct {
	LocationID  string
	Name        string
	Description string
	At          time.Time
}

// RetireLocation retires a location for good.
type RetireLocation struct {
	LocationID string
	At         time.Time
}

// Create decides the creation of a location that does not exist yet.
func (l Location) Create(c CreateLocation) ([]domain.Event, error) {
	if l.Exists() {
		return nil, l.refuse(CmdCreateLocation)
	}
	if err := domain.FirstError(
		domain.ValidateID("locationId", c.LocationID),
		domain.ValidateName("name", c.Name, MaxNameLength),
		domain.ValidateText("description", c.Description, MaxDescriptionLength),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	return []domain.Event{LocationCreated{LocationID: c.LocationID, Name: c.Name, Description: c.Description, At: c.At.UTC()}}, nil
}

// Update updates an active location; no change decides nothing.
func (l Location) Update(c UpdateLocation) ([]domain.Event, error) {
	if err := l.admit(c.LocationID, CmdUpdateLocation, c.At); err != nil {
		return nil, err
	}
	if err := domain.FirstError(
		domain.ValidateName("name", c.Name, MaxNameLength),
		domain.ValidateText("description", c.Description, MaxDescriptionLength),
	); err != nil {
		return nil, err
	}
	if c.Name == l.Name && c.Description == l.Description {
		return nil, nil
	}
	return []domain.Event{LocationUpdated{LocationID: l.ID, Name: c.Name, Description: c.Description, At: c.At.UTC()}}, nil
}

// Retire retires an active location. Whether nodes or services still use it
// is the caller's concern: the location aggregate does not know them.
func (l Location) Retire(c RetireLocation) ([]domain.Event, error) {
	if err := l.admit(c.LocationID, CmdRetireLocation, c.At); err != nil {
		return nil, err
	}
	return []domain.Event{LocationRetired{LocationID: l.ID, At: c.At.UTC()}}, nil
}

func (l Location) admit(id, command string, at time.Time) error {
	return domain.Admit(locationEntity, l.ID, l.Status, LocationAllowed, "locationId", id, command, at)
}

func (l Location) refuse(command string) error {
	return &domain.StateError{Entity: locationEntity, ID: l.ID, Command: command, State: string(l.Status)}
}
