package graph

import (
	"cairn/commands/services"
	"cairn/domain/ocl"
	"cairn/graph/model"
	"cairn/internal/ptr"
)

// updateInput turns the API's update input into the command's.
func updateInput(in model.UpdateServiceInput) (services.Update, error) {
	vars, err := variablesInput(in.Variables)
	if err != nil {
		return services.Update{}, err
	}
	return services.Update{ServiceID: in.ServiceID, TemplateVersion: ptr.Value(in.TemplateVersion), Variables: vars}, nil
}

// updatePlanModel presents an update plan.
func updatePlanModel(p services.UpdatePlan, svc *model.Service) *model.ServiceUpdatePlan {
	counts := p.Counts()
	out := &model.ServiceUpdatePlan{
		Service: svc, Revision: max(p.Revision, 1), FromVersion: p.FromVersion, ToVersion: p.ToVersion,
		Variables: []model.VariableChange{}, Changes: make([]model.ResourceChange, 0, len(p.Changes)),
		Creates: counts[ocl.ActionCreate], Updates: counts[ocl.ActionUpdate], Replaces: counts[ocl.ActionReplace],
		Destroys: counts[ocl.ActionDestroy], NoChange: p.NoChange,
	}
	for _, v := range p.Variables {
		out.Variables = append(out.Variables, model.VariableChange{Name: v.Name, Old: model.JSON(v.Old), New: model.JSON(v.New)})
	}
	for _, c := range p.Changes {
		rc := model.ResourceChange{Name: c.Name, ResourceID: c.ResourceID, Plugin: c.Plugin, Type: c.Type,
			Action: model.ResourceAction(upper(c.Action)), Reasons: nonNil(c.Reasons), Properties: []model.PropertyChange{}}
		for _, pc := range c.Properties {
			rc.Properties = append(rc.Properties, model.PropertyChange{Path: pc.Path, Old: model.JSON(pc.Old), New: model.JSON(pc.New)})
		}
		out.Changes = append(out.Changes, rc)
	}
	return out
}
