package eventstore

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// undecodableEvery is how often a reader reports how many more events of a
// type it skipped since it first logged one.
const undecodableEvery = time.Minute

// Undecodable reports the events a reader skips because this build cannot
// decode them (a newer build's types, met during a rolling upgrade): the
// first of each type is logged with its error, the others are counted and
// their number logged once a minute. One line per skipped event flooded
// the log with hundreds of thousands of lines when a log held many.
type Undecodable struct {
	log    zerolog.Logger
	reader string // who skips, as the log says: "dispatcher", "scheduler"
	every  time.Duration
	now    func() time.Time

	mu    sync.Mutex
	types map[string]*skipped
}

// skipped counts one event type's skipped events.
type skipped struct {
	total    int64
	unlogged int64 // skipped since the last line
	logged   time.Time
}

// NewUndecodable reports the events reader skips to log.
func NewUndecodable(log zerolog.Logger, reader string) *Undecodable {
	return &Undecodable{log: log, reader: reader, every: undecodableEvery, now: time.Now, types: map[string]*skipped{}}
}

// Skip reports that rec was skipped because decoding it failed with err.
func (u *Undecodable) Skip(rec RecordedEvent, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	s := u.types[rec.Type]
	if s == nil {
		s = &skipped{logged: now}
		u.types[rec.Type] = s
		s.total++
		u.log.Error().Err(err).Str("type", rec.Type).Str("stream", rec.StreamID).Int64("version", rec.Version).
			Msgf("%s cannot decode an event; skipping it and others of its type (counted once a minute)", u.reader)
		return
	}
	s.total++
	s.unlogged++
	if now.Sub(s.logged) < u.every {
		return
	}
	u.log.Warn().Str("type", rec.Type).Int64("skipped", s.unlogged).Int64("skipped_in_all", s.total).
		Str("last_stream", rec.StreamID).Msgf("%s skipped more events it cannot decode", u.reader)
	s.unlogged, s.logged = 0, now
}
