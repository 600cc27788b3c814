package tenant_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"cairn/domain"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

// noChange marks an allowed command that, as issued, decides nothing.
const noChange = "(no change)"

// matrix runs every command in every status of one aggregate A with status
// type S, against its allowed-commands table.
type matrix[S ~string, A any] struct {
	entity, id string
	statuses   []S
	commands   []string
	create     string                  // the creation command
	history    map[S][]domain.Event    // reaches each status
	fold       func(...domain.Event) A // folds events into a state
	status     func(A) S               // reads the state's status
	run        map[string]func(A) ([]domain.Event, error)
	allowed    func(S) []string
	next       map[S]map[string]S // status after each allowed command, or noChange
}

func (m matrix[S, A]) check(t *testing.T) {
	for _, status := range m.statuses {
		state := m.fold(m.history[status]...)
		if m.status(state) != status {
			t.Fatalf("history for %s folds to %s", status, m.status(state))
		}
		for _, cmd := range m.commands {
			t.Run(string(status)+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				es, err := m.run[cmd](state)
				want, expected := m.next[status][cmd]
				allowed := slices.Contains(m.allowed(status), cmd)
				if allowed != expected {
					t.Fatalf("table allows=%v but test expects a transition=%v", allowed, expected)
				}
				if !allowed {
					var se *domain.StateError
					if !errors.As(err, &se) || se.Command != cmd || se.State != string(status) || se.Entity != m.entity ||
						se.ID != m.id || !errors.Is(err, domain.ErrConflict) {
						t.Fatalf("want state error for %s in %s, got %v", cmd, status, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("allowed command failed: %v", err)
				}
				if want == noChange {
					if len(es) != 0 {
						t.Fatalf("want no events, got %v", es)
					}
					return
				}
				if len(es) == 0 {
					t.Fatal("want events, got none")
				}
				after := m.fold(append(slices.Clone(m.history[status]), es...)...)
				if got := m.status(after); got != want {
					t.Fatalf("status after %s = %s, want %s", cmd, got, want)
				}
			})
		}
	}
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		var zero A
		for _, cmd := range m.commands {
			es, err := m.run[cmd](zero)
			if cmd == m.create {
				if err != nil || len(es) == 0 {
					t.Errorf("%s on a new %s: %v %v", cmd, m.entity, es, err)
				}
				continue
			}
			var nf *domain.NotFoundError
			if !errors.As(err, &nf) || nf.ID != m.id || nf.Entity != m.entity || !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s on a missing %s: %v", cmd, m.entity, err)
			}
		}
	})
}
