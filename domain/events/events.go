// Package events assembles the registry of every domain event type. It lives
// outside package domain because it imports every aggregate, and they import
// domain.
package events

import (
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/jointoken"
	"cairn/domain/node"
	"cairn/domain/placement"
	"cairn/domain/resource"
	"cairn/domain/schedule"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
)

// Registry returns a new registry holding every aggregate's events.
func Registry() *domain.Registry {
	r := domain.NewRegistry()
	node.RegisterEvents(r)
	job.RegisterEvents(r)
	template.RegisterEvents(r)
	service.RegisterEvents(r)
	service.RegisterNameEvents(r)
	resource.RegisterEvents(r)
	tenant.RegisterEvents(r)
	jointoken.RegisterEvents(r)
	schedule.RegisterEvents(r)
	placement.RegisterEvents(r)
	return r
}
