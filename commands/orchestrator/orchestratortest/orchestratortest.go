// Package orchestratortest records catalog and service requests straight
// through the domain's deciders, for tests and benchmarks that exercise the
// orchestrator without the API in front of it. Variables are recorded in
// plain JSON (read back with orchestrator.PlainVariables), so descriptors
// used here should declare no sensitive variable.
package orchestratortest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/eventstore"
)

// Publish registers and publishes a descriptor (JSON or YAML) as a template
// version and returns it parsed.
func Publish(ctx context.Context, store *eventstore.Store, catalog ocl.PluginCatalog, vendor string, doc []byte) (*ocl.Descriptor, error) {
	desc, err := ocl.Parse(doc)
	if err != nil {
		return nil, err
	}
	if err := desc.Validate(catalog); err != nil {
		return nil, err
	}
	canon, err := desc.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	digest, err := desc.Digest()
	if err != nil {
		return nil, err
	}
	name, version := desc.Metadata.Name, desc.Metadata.Version
	at := time.Now()
	_, err = commands.Execute[template.TemplateVersion](ctx, store, domain.TemplateStream, template.ID(name, version), commands.Meta{Actor: vendor},
		[]string{"publish", name, version, digest}, func(t template.TemplateVersion) ([]domain.Event, error) {
			evs, err := t.Register(template.Register{Name: name, Version: version, Vendor: vendor, Descriptor: canon, Digest: "sha256:" + digest, At: at})
			if err != nil {
				return nil, err
			}
			for _, ev := range evs {
				t.Apply(ev)
			}
			if t.Status != template.StatusValidated {
				return evs, nil
			}
			pub, err := t.Publish(template.Publish{Name: name, Version: version, At: at})
			return append(evs, pub...), err
		})
	if err != nil {
		return nil, err
	}
	return desc, nil
}

// Registration is a deployment request.
type Registration struct {
	ServiceID string
	TenantID  string
	Name      string
	// Descriptor is the published template version to deploy.
	Descriptor *ocl.Descriptor
	Flavor     string
	Variables  map[string]json.RawMessage
}

// Register records a service's registration request with the resource ids
// of its plan, as the services' command handler does.
func Register(ctx context.Context, store *eventstore.Store, r Registration) error {
	recorded, ids, err := planned(r.Descriptor, r.Flavor, r.Variables, ocl.ServiceContext{ID: r.ServiceID, Tenant: r.TenantID})
	if err != nil {
		return err
	}
	name := r.Name
	if name == "" {
		name = r.ServiceID
	}
	_, err = commands.Execute[service.Service](ctx, store, domain.ServiceStream, r.ServiceID, commands.Meta{Actor: "tester", Tenant: r.TenantID, CorrelationID: "deploy-" + r.ServiceID},
		nil, func(s service.Service) ([]domain.Event, error) {
			return s.Register(service.Register{
				ServiceID: r.ServiceID, TenantID: r.TenantID, Name: name,
				TemplateName: r.Descriptor.Metadata.Name, TemplateVersion: r.Descriptor.Metadata.Version,
				Variables: recorded, ResourceIDs: ids, At: time.Now(),
			})
		})
	return err
}

// planned resolves the variables, plans the service and returns the
// variables to record (plain JSON) and the resource ids of the plan.
func planned(d *ocl.Descriptor, flavor string, given map[string]json.RawMessage, svc ocl.ServiceContext) (json.RawMessage, []string, error) {
	vars, err := d.ResolveVariables(flavor, given)
	if err != nil {
		return nil, nil, err
	}
	g, err := d.Plan(vars, svc)
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	for _, n := range g.Nodes() {
		ids = append(ids, n.ResourceID)
	}
	recorded, err := json.Marshal(vars)
	return recorded, ids, err
}

// Update records a service's update to a (published) descriptor and
// variables, with the resource ids of its plan, as the services' command
// handler does.
func Update(ctx context.Context, store *eventstore.Store, serviceID string, desc *ocl.Descriptor, variables map[string]json.RawMessage) error {
	s, _, err := commands.Load[service.Service](ctx, store, domain.ServiceStream, serviceID)
	if err != nil {
		return err
	}
	recorded, ids, err := planned(desc, "", variables, ocl.ServiceContext{ID: serviceID, Tenant: s.TenantID})
	if err != nil {
		return err
	}
	_, err = commands.Execute[service.Service](ctx, store, domain.ServiceStream, serviceID, commands.Meta{Actor: "tester"},
		nil, func(s service.Service) ([]domain.Event, error) {
			return s.Update(service.Update{ServiceID: serviceID, TemplateVersion: desc.Metadata.Version,
				Variables: recorded, ResourceIDs: ids, At: time.Now()})
		})
	return err
}

// Request records start, stop or remove (the service command names).
func Request(ctx context.Context, store *eventstore.Store, serviceID, command string) error {
	_, err := commands.Execute[service.Service](ctx, store, domain.ServiceStream, serviceID, commands.Meta{Actor: "tester"},
		nil, func(s service.Service) ([]domain.Event, error) {
			at := time.Now()
			switch command {
			case service.CmdStart:
				return s.Start(service.Start{ServiceID: serviceID, At: at})
			case service.CmdStop:
				return s.Stop(service.Stop{ServiceID: serviceID, At: at})
			case service.CmdRemove:
				return s.Remove(service.Remove{ServiceID: serviceID, At: at})
			}
			return nil, fmt.Errorf("orchestratortest: %q is not a request (start, stop, remove)", command)
		})
	return err
}

// Wait polls the service until it is in one of the statuses and returns it.
func Wait(ctx context.Context, store *eventstore.Store, serviceID string, statuses ...service.Status) (service.Service, error) {
	var s service.Service
	for {
		var err error
		s, _, err = commands.Load[service.Service](ctx, store, domain.ServiceStream, serviceID)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return s, err
		}
		if slices.Contains(statuses, s.Status) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("service %s is %s, not %v: %w", serviceID, s.Status, statuses, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
