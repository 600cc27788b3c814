package scheduler

import (
	"context"
	"fmt"

	"cairn/domain"
	"cairn/domain/node"
	"cairn/domain/ocl"
	"cairn/domain/placement"
	"cairn/plugins"
)

// RequestFor is what a planned resource instance asks of the scheduler:
// its requests (the type's defaults where the descriptor gives none), its
// placement, and the groups spread and distinct count it in. pin is the
// node its properties name, if any.
func RequestFor(n ocl.Node, rt plugins.ResourceType, serviceID, templateName, pin string) (Request, error) {
	a := placement.Ask{ResourceID: n.ResourceID, Request: n.Requests.Or(rt.DefaultRequests), Pin: pin,
		SpreadGroup: "template:" + templateName + "/" + n.Resource, DistinctGroup: "service:" + serviceID + "/" + n.Resource}
	if p := n.Placement; p != nil {
		a.Location = p.Location
		a.Selector = node.SelectorOf(p.Labels)
		sel, err := node.ParseSelector(p.Selector)
		if err != nil {
			return Request{}, err
		}
		a.Selector = append(a.Selector, sel...)
		a.Spread, a.Distinct = placement.Scope(p.Spread), placement.Scope(p.Distinct)
	}
	return Request{Ask: a, ServiceID: serviceID, Groups: []string{a.SpreadGroup, a.DistinctGroup}}, nil
}

// PlacedType returns a resource's type when the scheduler places it.
func PlacedType(reg *plugins.Registry, pluginName, typeName string) (plugins.ResourceType, bool) {
	types, _ := reg.Types(pluginName)
	for _, rt := range types {
		if rt.Name == typeName {
			return rt, rt.Placed
		}
	}
	return plugins.ResourceType{}, false
}

// PlanCheck refuses, before a service is registered, a plan with a
// resource no node could ever take: one asking more than any node of its
// location and selector offers, or whose location and selector match no
// node at all. What is allocated now does not count: capacity may free up
// before the deployment reaches the resource; nor is a plan refused while
// a node it may go on has not reported what it offers.
type PlanCheck struct {
	Scheduler *Scheduler
	Plugins   *plugins.Registry
}

// CheckPlan implements services.CapacityCheck.
func (c PlanCheck) CheckPlan(ctx context.Context, plan *ocl.Graph, serviceID, templateName string) error {
	var asks []placement.Ask
	var names []string
	for _, n := range plan.Nodes() {
		rt, placed := PlacedType(c.Plugins, n.Plugin, n.Type)
		if !placed {
			continue
		}
		r, err := RequestFor(n, rt, serviceID, templateName, "")
		if err != nil {
			return domain.Invalid("resources."+n.Name+".placement.selector", domain.Reason(err))
		}
		asks = append(asks, r.Ask)
		names = append(names, n.Name)
	}
	if len(asks) == 0 {
		return nil
	}
	cands, err := c.Scheduler.Candidates(ctx)
	if err != nil {
		return err
	}
	for i, a := range asks {
		if err := everFits(a, cands); err != nil {
			return domain.Invalid("resources."+names[i]+".requests", err.Error())
		}
	}
	return nil
}

// everFits reports why no node that the ask's location and selector allow
// could take its request even empty; nil when one could, or might (a node
// that has not reported its facts yet).
func everFits(a placement.Ask, cands []placement.Candidate) error {
	var largest placement.Candidate
	matched := 0
	for _, c := range cands {
		if c.NotReady == "decommissioned" || a.Location != "" && c.Location != a.Location || !a.Selector.Matches(c.Labels) {
			continue
		}
		matched++
		if c.Unmeasured || a.Request.Fits(c.Allocatable) {
			return nil
		}
		if c.Allocatable.MemoryBytes > largest.Allocatable.MemoryBytes || largest.ID == "" {
			largest = c
		}
	}
	if matched == 0 {
		where := "no node"
		if len(a.Selector) > 0 {
			where += " matches " + a.Selector.String()
		}
		if a.Location != "" {
			where += " in location " + a.Location
		}
		return fmt.Errorf("%s: enroll or label a node, or change the placement", where)
	}
	return fmt.Errorf("asks %s, more than any of the %d nodes it may go on offers (the largest, %s, offers %s)",
		a.Request, matched, largest.Name, largest.Allocatable)
}
