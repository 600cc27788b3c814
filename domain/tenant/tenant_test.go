package tenant_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/tenant"
)

func foldTenant(es ...domain.Event) tenant.Tenant {
	var x tenant.Tenant
	for _, e := range es {
		x.Apply(e)
	}
	return x
}

func foldUser(es ...domain.Event) tenant.User {
	var x tenant.User
	for _, e := range es {
		x.Apply(e)
	}
	return x
}

func foldToken(es ...domain.Event) tenant.APIToken {
	var x tenant.APIToken
	for _, e := range es {
		x.Apply(e)
	}
	return x
}

func foldLocation(es ...domain.Event) tenant.Location {
	var x tenant.Location
	for _, e := range es {
		x.Apply(e)
	}
	return x
}

var (
	hash            = strings.Repeat("ab", 32)
	tenantCreated   = tenant.TenantCreated{TenantID: "tenant-1", Name: "Acme", At: at(0)}
	tenantRenamed   = tenant.TenantRenamed{TenantID: "tenant-1", Name: "Acme Corp", At: at(1)}
	tenantSuspended = tenant.TenantSuspended{TenantID: "tenant-1", Reason: "unpaid", At: at(2)}
	tenantResumed   = tenant.TenantResumed{TenantID: "tenant-1", At: at(3)}
	userCreated     = tenant.UserCreated{UserID: "user-1", Name: "Ada", Role: tenant.RoleTenantAdmin, TenantID: "tenant-1", At: at(0)}
	userDisabled    = tenant.UserDisabled{UserID: "user-1", Reason: "left", At: at(1)}
	userEnabled     = tenant.UserEnabled{UserID: "user-1", At: at(2)}
	tokenIssued     = tenant.TokenIssued{TokenID: "tok-1", UserID: "user-1", Role: tenant.RoleTenantMember, TenantID: "tenant-1",
		SecretHash: hash, ExpiresAt: at(60), At: at(0)}
	tokenRevoked    = tenant.TokenRevoked{TokenID: "tok-1", Reason: "leaked", At: at(1)}
	locationCreated = tenant.LocationCreated{LocationID: "loc-1", Name: "Ghent", Description: "DC 1", At: at(0)}
	locationUpdated = tenant.LocationUpdated{LocationID: "loc-1", Name: "Ghent", Description: "DC 1, hall B", At: at(1)}
	locationRetired = tenant.LocationRetired{LocationID: "loc-1", At: at(2)}
)

func TestTenantMatrix(t *testing.T) {
	t.Parallel()
	matrix[tenant.TenantStatus, tenant.Tenant]{
		entity: "tenant", id: "tenant-1", statuses: tenant.TenantStatuses, commands: tenant.TenantCommands,
		create: tenant.CmdCreateTenant,
		history: map[tenant.TenantStatus][]domain.Event{
			tenant.TenantStatusActive:    {tenantCreated},
			tenant.TenantStatusSuspended: {tenantCreated, tenantSuspended},
		},
		fold:    foldTenant,
		status:  func(x tenant.Tenant) tenant.TenantStatus { return x.Status },
		allowed: tenant.TenantAllowedCommands,
		run: map[string]func(tenant.Tenant) ([]domain.Event, error){
			tenant.CmdCreateTenant: func(x tenant.Tenant) ([]domain.Event, error) {
				return x.Create(tenant.CreateTenant{TenantID: "tenant-1", Name: "Acme", At: at(9)})
			},
			tenant.CmdRenameTenant: func(x tenant.Tenant) ([]domain.Event, error) {
				return x.Rename(tenant.RenameTenant{TenantID: "tenant-1", Name: "Acme NV", At: at(9)})
			},
			tenant.CmdSuspendTenant: func(x tenant.Tenant) ([]domain.Event, error) {
				return x.Suspend(tenant.SuspendTenant{TenantID: "tenant-1", At: at(9)})
			},
			tenant.CmdResumeTenant: func(x tenant.Tenant) ([]domain.Event, error) {
				return x.Resume(tenant.ResumeTenant{TenantID: "tenant-1", At: at(9)})
			},
		},
		next: map[tenant.TenantStatus]map[string]tenant.TenantStatus{
			tenant.TenantStatusActive:    {tenant.CmdRenameTenant: tenant.TenantStatusActive, tenant.CmdSuspendTenant: tenant.TenantStatusSuspended},
			tenant.TenantStatusSuspended: {tenant.CmdRenameTenant: tenant.TenantStatusSuspended, tenant.CmdResumeTenant: tenant.TenantStatusActive},
		},
	}.check(t)
}

func TestUserMatrix(t *testing.T) {
	t.Parallel()
	matrix[tenant.UserStatus, tenant.User]{
		entity: "user", id: "user-1", statuses: tenant.UserStatuses, commands: tenant.UserCommands,
		create: tenant.CmdCreateUser,
		history: map[tenant.UserStatus][]domain.Event{
			tenant.UserStatusActive:   {userCreated},
			tenant.UserStatusDisabled: {userCreated, userDisabled},
		},
		fold:    foldUser,
		status:  func(x tenant.User) tenant.UserStatus { return x.Status },
		allowed: tenant.UserAllowedCommands,
		run: map[string]func(tenant.User) ([]domain.Event, error){
			tenant.CmdCreateUser: func(x tenant.User) ([]domain.Event, error) {
				return x.Create(tenant.CreateUser{UserID: "user-1", Name: "Ada", Role: tenant.RoleOperator, At: at(9)})
			},
			tenant.CmdDisableUser: func(x tenant.User) ([]domain.Event, error) {
				return x.Disable(tenant.DisableUser{UserID: "user-1", Reason: "on leave", At: at(9)})
			},
			tenant.CmdEnableUser: func(x tenant.User) ([]domain.Event, error) {
				return x.Enable(tenant.EnableUser{UserID: "user-1", At: at(9)})
			},
		},
		next: map[tenant.UserStatus]map[string]tenant.UserStatus{
			tenant.UserStatusActive:   {tenant.CmdDisableUser: tenant.UserStatusDisabled},
			tenant.UserStatusDisabled: {tenant.CmdEnableUser: tenant.UserStatusActive},
		},
	}.check(t)
}

func TestTokenMatrix(t *testing.T) {
	t.Parallel()
	matrix[tenant.TokenStatus, tenant.APIToken]{
		entity: "api token", id: "tok-1", statuses: tenant.TokenStatuses, commands: tenant.TokenCommands,
		create: tenant.CmdIssueToken,
		history: map[tenant.TokenStatus][]domain.Event{
			tenant.TokenStatusActive:  {tokenIssued},
			tenant.TokenStatusRevoked: {tokenIssued, tokenRevoked},
		},
		fold:    foldToken,
		status:  func(x tenant.APIToken) tenant.TokenStatus { return x.Status },
		allowed: tenant.TokenAllowedCommands,
		run: map[string]func(tenant.APIToken) ([]domain.Event, error){
			tenant.CmdIssueToken: func(x tenant.APIToken) ([]domain.Event, error) {
				return x.Issue(tenant.IssueToken{TokenID: "tok-1", UserID: "user-1", Role: tenant.RoleAuditor,
					SecretHash: hash, ExpiresAt: at(60), At: at(9)})
			},
			tenant.CmdRevokeToken: func(x tenant.APIToken) ([]domain.Event, error) {
				return x.Revoke(tenant.RevokeToken{TokenID: "tok-1", At: at(9)})
			},
		},
		next: map[tenant.TokenStatus]map[string]tenant.TokenStatus{
			tenant.TokenStatusActive:  {tenant.CmdRevokeToken: tenant.TokenStatusRevoked},
			tenant.TokenStatusRevoked: {},
		},
	}.check(t)
}

func TestLocationMatrix(t *testing.T) {
	t.Parallel()
	matrix[tenant.LocationStatus, tenant.Location]{
		entity: "location", id: "loc-1", statuses: tenant.LocationStatuses, commands: tenant.LocationCommands,
		create: tenant.CmdCreateLocation,
		history: map[tenant.LocationStatus][]domain.Event{
			tenant.LocationStatusActive:  {locationCreated},
			tenant.LocationStatusRetired: {locationCreated, locationRetired},
		},
		fold:    foldLocation,
		status:  func(x tenant.Location) tenant.LocationStatus { return x.Status },
		allowed: tenant.LocationAllowedCommands,
		run: map[string]func(tenant.Location) ([]domain.Event, error){
			tenant.CmdCreateLocation: func(x tenant.Location) ([]domain.Event, error) {
				return x.Create(tenant.CreateLocation{LocationID: "loc-1", Name: "Ghent", At: at(9)})
			},
			tenant.CmdUpdateLocation: func(x tenant.Location) ([]domain.Event, error) {
				return x.Update(tenant.UpdateLocation{LocationID: "loc-1", Name: "Gent", At: at(9)})
			},
			tenant.CmdRetireLocation: func(x tenant.Location) ([]domain.Event, error) {
				return x.Retire(tenant.RetireLocation{LocationID: "loc-1", At: at(9)})
			},
		},
		next: map[tenant.LocationStatus]map[string]tenant.LocationStatus{
			tenant.LocationStatusActive:  {tenant.CmdUpdateLocation: tenant.LocationStatusActive, tenant.CmdRetireLocation: tenant.LocationStatusRetired},
			tenant.LocationStatusRetired: {},
		},
	}.check(t)
}

func TestNoChangeCommands(t *testing.T) {
	t.Parallel()
	es, err := foldTenant(tenantCreated).Rename(tenant.RenameTenant{TenantID: "tenant-1", Name: "Acme", At: at(9)})
	if err != nil || len(es) != 0 {
		t.Errorf("rename to the same name: %v %v", es, err)
	}
	es, err = foldLocation(locationCreated).Update(tenant.UpdateLocation{LocationID: "loc-1", Name: "Ghent", Description: "DC 1", At: at(9)})
	if err != nil || len(es) != 0 {
		t.Errorf("update with the same values: %v %v", es, err)
	}
}

func TestRolesAndTenants(t *testing.T) {
	t.Parallel()
	for _, role := range tenant.Roles {
		withTenant, withoutTenant := "tenant-1", ""
		if !role.TenantScoped() {
			withTenant, withoutTenant = "", "tenant-1"
		}
		if _, err := (tenant.User{}).Create(tenant.CreateUser{UserID: "u", Name: "n", Role: role, TenantID: withTenant, At: at(0)}); err != nil {
			t.Errorf("user with role %s: %v", role, err)
		}
		_, err := tenant.User{}.Create(tenant.CreateUser{UserID: "u", Name: "n", Role: role, TenantID: withoutTenant, At: at(0)})
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != "tenantId" {
			t.Errorf("role %s with tenant %q: %v", role, withoutTenant, err)
		}
		_, err = tenant.APIToken{}.Issue(tenant.IssueToken{TokenID: "t", UserID: "u", Role: role, TenantID: withoutTenant,
			SecretHash: hash, ExpiresAt: at(1), At: at(0)})
		if !errors.As(err, &ve) || ve.Field != "tenantId" {
			t.Errorf("token role %s with tenant %q: %v", role, withoutTenant, err)
		}
	}
	_, err := tenant.User{}.Create(tenant.CreateUser{UserID: "u", Name: "n", Role: "agent", At: at(0)})
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "role" {
		t.Errorf("unknown role: %v", err)
	}
}

func TestTokenUsable(t *testing.T) {
	t.Parallel()
	tok := foldToken(tokenIssued)
	if !tok.Usable(at(59)) || tok.Usable(at(60)) {
		t.Fatal("expiry not honoured")
	}
	tok.Apply(tokenRevoked)
	if tok.Usable(at(2)) {
		t.Fatal("revoked token is usable")
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		field string
		run   func() ([]domain.Event, error)
	}{
		{"tenant id", "tenantId", func() ([]domain.Event, error) {
			return tenant.Tenant{}.Create(tenant.CreateTenant{TenantID: "", Name: "x", At: at(0)})
		}},
		{"tenant name", "name", func() ([]domain.Event, error) {
			return tenant.Tenant{}.Create(tenant.CreateTenant{TenantID: "t", Name: " x", At: at(0)})
		}},
		{"tenant name too long", "name", func() ([]domain.Event, error) {
			return tenant.Tenant{}.Create(tenant.CreateTenant{TenantID: "t", Name: strings.Repeat("x", tenant.MaxNameLength+1), At: at(0)})
		}},
		{"tenant time", "at", func() ([]domain.Event, error) {
			return tenant.Tenant{}.Create(tenant.CreateTenant{TenantID: "t", Name: "x"})
		}},
		{"rename to nothing", "name", func() ([]domain.Event, error) {
			return foldTenant(tenantCreated).Rename(tenant.RenameTenant{TenantID: "tenant-1", At: at(9)})
		}},
		{"suspend reason", "reason", func() ([]domain.Event, error) {
			return foldTenant(tenantCreated).Suspend(tenant.SuspendTenant{TenantID: "tenant-1", Reason: "\x07", At: at(9)})
		}},
		{"wrong tenant", "tenantId", func() ([]domain.Event, error) {
			return foldTenant(tenantCreated).Suspend(tenant.SuspendTenant{TenantID: "tenant-2", At: at(9)})
		}},
		{"user name", "name", func() ([]domain.Event, error) {
			return tenant.User{}.Create(tenant.CreateUser{UserID: "u", Name: "a\nb", Role: tenant.RoleAdmin, At: at(0)})
		}},
		{"user id", "userId", func() ([]domain.Event, error) {
			return tenant.User{}.Create(tenant.CreateUser{UserID: "u/1", Name: "a", Role: tenant.RoleAdmin, At: at(0)})
		}},
		{"token hash missing", "secretHash", func() ([]domain.Event, error) {
			return tenant.APIToken{}.Issue(tenant.IssueToken{TokenID: "t", UserID: "u", Role: tenant.RoleAdmin, ExpiresAt: at(1), At: at(0)})
		}},
		{"token hash too short", "secretHash", func() ([]domain.Event, error) {
			return tenant.APIToken{}.Issue(tenant.IssueToken{TokenID: "t", UserID: "u", Role: tenant.RoleAdmin,
				SecretHash: "abcd", ExpiresAt: at(1), At: at(0)})
		}},
		{"token hash upper case", "secretHash", func() ([]domain.Event, error) {
			return tenant.APIToken{}.Issue(tenant.IssueToken{TokenID: "t", UserID: "u", Role: tenant.RoleAdmin,
				SecretHash: strings.ToUpper(hash), ExpiresAt: at(1), At: at(0)})
		}},
		{"token already expired", "expiresAt", func() ([]domain.Event, error) {
			return tenant.APIToken{}.Issue(tenant.IssueToken{TokenID: "t", UserID: "u", Role: tenant.RoleAdmin,
				SecretHash: hash, ExpiresAt: at(0), At: at(0)})
		}},
		{"token user", "userId", func() ([]domain.Event, error) {
			return tenant.APIToken{}.Issue(tenant.IssueToken{TokenID: "t", Role: tenant.RoleAdmin, SecretHash: hash, ExpiresAt: at(1), At: at(0)})
		}},
		{"location description", "description", func() ([]domain.Event, error) {
			return tenant.Location{}.Create(tenant.CreateLocation{LocationID: "l", Name: "x",
				Description: strings.Repeat("d", tenant.MaxDescriptionLength+1), At: at(0)})
		}},
		{"location id", "locationId", func() ([]domain.Event, error) {
			return tenant.Location{}.Create(tenant.CreateLocation{LocationID: "l l", Name: "x", At: at(0)})
		}},
	}
	for _, c := range cases {
		_, err := c.run()
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: want validation error on %s, got %v", c.name, c.field, err)
		}
	}
}

// applier is any of this package's states.
type applier interface{ Apply(domain.Event) }

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	samples := []struct {
		event domain.Event
		state func() applier
	}{
		{tenantCreated, func() applier { return &tenant.Tenant{} }},
		{tenantRenamed, func() applier { x := foldTenant(tenantCreated); return &x }},
		{tenantSuspended, func() applier { x := foldTenant(tenantCreated); return &x }},
		{tenantResumed, func() applier { x := foldTenant(tenantCreated, tenantSuspended); return &x }},
		{userCreated, func() applier { return &tenant.User{} }},
		{userDisabled, func() applier { x := foldUser(userCreated); return &x }},
		{userEnabled, func() applier { x := foldUser(userCreated, userDisabled); return &x }},
		{tokenIssued, func() applier { return &tenant.APIToken{} }},
		{tokenRevoked, func() applier { x := foldToken(tokenIssued); return &x }},
		{locationCreated, func() applier { return &tenant.Location{} }},
		{locationUpdated, func() applier { x := foldLocation(locationCreated); return &x }},
		{locationRetired, func() applier { x := foldLocation(locationCreated); return &x }},
	}
	own := domain.NewRegistry()
	tenant.RegisterEvents(own)
	var types []string
	for _, s := range samples {
		types = append(types, s.event.EventType())
	}
	slices.Sort(types)
	if !slices.Equal(types, own.Types()) {
		t.Fatalf("samples cover %v, registered %v", types, own.Types())
	}
	reg := events.Registry()
	for _, s := range samples {
		typ, v, payload, err := reg.Encode(s.event)
		if err != nil || v != 1 {
			t.Fatalf("encode %T: %v", s.event, err)
		}
		decoded, err := reg.Decode(typ, v, json.RawMessage(payload))
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		if got := decoded; !reflect.DeepEqual(got, s.event) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, got, s.event)
		}
		base, fromValue, fromPointer := s.state(), s.state(), s.state()
		fromValue.Apply(s.event)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded pointer) = %+v", typ, fromValue, fromPointer)
		}
		if reflect.DeepEqual(fromValue, base) {
			t.Errorf("%s: Apply changed nothing", typ)
		}
	}
}
