// Package jobs handles the commands of jobs: the caller's (submit, cancel)
// and the dispatch side's (lease, acknowledge, start, finish, expire, lose,
// retry, fan out).
package jobs

import (
	"context"
	"fmt"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/internal/seal"
	"cairn/sal/catalog"
)

// Handlers runs job commands against the event store.
type Handlers struct {
	store   commands.Store
	now     commands.Clock
	newID   commands.IDGenerator
	catalog *catalog.Validator
	sealer  *seal.Sealer
}

// NewHandlers returns job handlers; clock stamps commands, ids names jobs
// submitted without a caller-chosen id, validator checks job arguments
// against the schemas the agents enforce, and sealer seals a job's secrets
// (nil: jobs may not carry any).
func NewHandlers(store commands.Store, clock commands.Clock, ids commands.IDGenerator, validator *catalog.Validator, sealer *seal.Sealer) *Handlers {
	return &Handlers{store: store, now: clock, newID: ids, catalog: validator, sealer: sealer}
}

// DuplicateJobError reports a submission under a job id that exists: the
// job is not run again.
type DuplicateJobError struct {
	JobID string
}

func (e *DuplicateJobError) Error() string {
	return fmt.Sprintf("job %q already exists and is not run again; submit with a new job id to run it again", e.JobID)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *DuplicateJobError) Is(target error) bool { return target == domain.ErrConflict }

// run decides one command on an existing job.
func (h *Handlers) run(ctx context.Context, meta commands.Meta, id string, input any,
	decide func(job.Job, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	if err := commands.RequireID("jobId", id); err != nil {
		return commands.Outcome{}, err
	}
	at := h.now()
	res, err := commands.Execute[job.Job](ctx, h.store, domain.JobStream, id, meta, input,
		func(j job.Job) ([]domain.Event, error) { return decide(j, at) })
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}
