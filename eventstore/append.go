package eventstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Append writes one command's events atomically, checking each stream's
// expected version. Concurrent appends are grouped into shared transactions
// (group commit), one round trip each, so throughput grows with concurrency;
// each request still succeeds or fails on its own.
func (s *Store) Append(ctx context.Context, req AppendRequest) (AppendResult, error) {
	op, err := s.prepare(ctx, req)
	if err != nil {
		return AppendResult{}, err
	}
	if len(op.events) == 0 {
		// A command that decided nothing leaves no trace; its retry decides
		// nothing again (or, if the state moved on, what is right then).
		return AppendResult{}, nil
	}
	if batch, err := s.appender.submit(op); err != nil {
		return AppendResult{}, err
	} else if batch != nil {
		// No batch was free to join: this caller leads one itself.
		s.appender.run(batch)
	}
	// Once claimed into a batch an append runs to completion; a caller whose
	// context ends while still pending is answered with ctx.Err() at the next
	// claim, so there is always an answer to wait for.
	out := <-op.result
	return out.result, out.err
}

type encodedEvent struct {
	stream        int
	typ           string
	schemaVersion int
	payload       []byte
}

type appendOp struct {
	ctx         context.Context
	req         AppendRequest
	events      []encodedEvent
	metadata    []byte
	fingerprint []byte
	keys        []string
	result      chan appendOutcome
	// reread is set once the op was retried with its streams' heads read
	// from the database, after they conflicted with the cached ones.
	reread bool
	// queued is when the op joined the queue.
	queued time.Time
}

type appendOutcome struct {
	result AppendResult
	err    error
}

func (op *appendOp) respond(r AppendResult, err error) {
	op.result <- appendOutcome{result: r, err: err}
}

// prepare validates and encodes a request before it joins a batch, so a bad
// request never reaches the database.
func (s *Store) prepare(ctx context.Context, req AppendRequest) (*appendOp, error) {
	if len(req.Streams) == 0 && req.CommandID == "" {
		return nil, ErrEmptyAppend
	}
	if req.Fence == nil {
		req.Fence = fenceOf(ctx)
	}
	op := &appendOp{ctx: ctx, req: req, result: make(chan appendOutcome, 1)}
	seen := map[string]bool{}
	// The fingerprint is derived from the events only for an idempotent
	// append that did not bring its own.
	var fp hash.Hash
	if req.CommandID != "" && len(req.Fingerprint) == 0 {
		fp = sha256.New()
	}
	for i, st := range req.Streams {
		if st.StreamID == "" || st.StreamType == "" {
			return nil, fmt.Errorf("append: stream %d needs a stream id and a stream type", i)
		}
		if seen[st.StreamID] {
			return nil, fmt.Errorf("append: stream %q appears twice in one request; merge its events", st.StreamID)
		}
		if st.Expected < AnyVersion {
			return nil, fmt.Errorf("append: stream %q: invalid expected version %d", st.StreamID, st.Expected)
		}
		seen[st.StreamID] = true
		op.keys = append(op.keys, "s:"+st.StreamID)
		if fp != nil {
			fp.Write([]byte(st.StreamID))
		}
		for _, e := range st.Events {
			typ, ver, payload, err := s.registry.Encode(e)
			if err != nil {
				return nil, fmt.Errorf("append to stream %q: %w", st.StreamID, err)
			}
			op.events = append(op.events, encodedEvent{stream: i, typ: typ, schemaVersion: ver, payload: payload})
			if fp != nil {
				fp.Write([]byte(typ))
				fp.Write(payload)
			}
		}
	}
	md := req.Metadata
	md.CommandID = req.CommandID
	if req.CommandID != "" {
		op.keys = append(op.keys, "c:"+req.CommandID)
		op.fingerprint = req.Fingerprint
		if fp != nil {
			op.fingerprint = fp.Sum(nil)
		}
		md.CommandFingerprint = hex.EncodeToString(op.fingerprint)
	}
	var err error
	if op.metadata, err = json.Marshal(md); err != nil {
		return nil, fmt.Errorf("append: encode metadata: %w", err)
	}
	return op, nil
}

// appender groups concurrent appends into shared transactions, like
// PostgreSQL's own group commit: a caller that finds a transaction slot free
// leads a batch of everything pending; the others wait for its answer, and
// whoever finishes a batch starts the next one from what queued meanwhile.
// Two requests that touch the same stream (or carry the same command id)
// never share a batch or run in two batches at once, so each batch can chain
// hashes from known heads.
type appender struct {
	s     *Store
	heads *headCache

	batches, appends, events atomic.Int64

	mu       sync.Mutex
	pending  []*appendOp
	busy     map[string]bool
	inflight int
	// started holds when each batch in flight began, by its first request.
	started map[*appendOp]time.Time
	// timer is armed while pending requests wait for a batch in flight
	// rather than start a small one beside it, or for the writers of the
	// last batch to join them (see claimLocked); timerAt is when it fires.
	timer   *time.Timer
	timerAt time.Time
	// waitingLanes counts the requests not answered yet by lane (see
	// appendOp.lane), queuedLanes those of them not in a batch yet: how
	// many could share one batch.
	waitingLanes, queuedLanes map[string]int
	crowd                     crowd
	closed                    bool
	idle                      *sync.Cond // signalled when inflight drops to zero
}

// sideBatchMin: a batch beside one in flight starts only when it is worth
// a transaction of its own, carrying at least this many requests, or once
// the batch in flight has run for Options.SideBatchAfter (a long append,
// such as a fan-out's thousands of children, must not hold everyone up).
// Otherwise what queued joins the next batch when the one in flight
// commits. Small batches side by side cost a transaction each: with several
// replicas on one database, each holding a share of the writers, they cost
// more than they gain.
const sideBatchMin = 4

func newAppender(s *Store) *appender {
	a := &appender{s: s, heads: newHeadCache(s.opts.HeadCacheSize), busy: map[string]bool{}, started: map[*appendOp]time.Time{},
		waitingLanes: map[string]int{}, queuedLanes: map[string]int{}, crowd: crowd{window: 2 * s.opts.GatherFor}}
	a.idle = sync.NewCond(&a.mu)
	return a
}

// submit queues op and, when a transaction slot is free, claims a batch for
// the caller to run.
func (a *appender) submit(op *appendOp) ([]*appendOp, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, ErrClosed
	}
	op.queued = time.Now()
	a.pending = append(a.pending, op)
	a.waitingLanes[op.lane()]++
	a.queuedLanes[op.lane()]++
	a.crowd.observe(op.queued, len(a.waitingLanes))
	return a.claimLocked(), nil
}

// claimLocked takes the oldest pending requests whose keys are free, keeping
// arrival order among requests that share a key, if a slot is free.
//
// With no batch in flight, requests for fewer streams than the crowd lately
// seen waiting at once wait for the rest, up to Options.GatherFor: the
// writers of the batch that just committed are on their way back, and a
// batch started without them splits the writers into two cohorts that
// alternate in half-sized transactions. The crowd counts streams, not
// requests: requests for one stream go in separate batches anyway.
func (a *appender) claimLocked() []*appendOp {
	if a.inflight >= a.s.opts.AppendWorkers || len(a.pending) == 0 {
		return nil
	}
	now := time.Now()
	crowd := a.crowd.peak(now)
	if a.inflight == 0 && len(a.queuedLanes) < crowd {
		if wait := a.s.opts.GatherFor - now.Sub(a.pending[0].queued); wait > 0 {
			a.wakeLocked(now, wait)
			return nil
		}
	}
	if a.inflight > 0 && len(a.pending) < sideBatchMin {
		if wait := a.s.opts.SideBatchAfter - now.Sub(a.oldestLocked()); wait > 0 {
			a.wakeLocked(now, wait)
			return nil
		}
	}
	var batch []*appendOp
	blocked := map[string]bool{}
	rest := a.pending[:0]
	for _, op := range a.pending {
		if err := op.ctx.Err(); err != nil {
			op.respond(AppendResult{}, err)
			release(a.queuedLanes, op.lane())
			release(a.waitingLanes, op.lane())
			continue
		}
		free := len(batch) < a.s.opts.MaxBatch
		for _, k := range op.keys {
			if a.busy[k] || blocked[k] {
				free = false
			}
		}
		for _, k := range op.keys {
			blocked[k] = true
		}
		if free {
			batch = append(batch, op)
			release(a.queuedLanes, op.lane())
		} else {
			rest = append(rest, op)
		}
	}
	clear(a.pending[len(rest):])
	a.pending = rest
	if len(batch) == 0 {
		return nil
	}
	for _, op := range batch {
		for _, k := range op.keys {
			a.busy[k] = true
		}
	}
	a.inflight++
	a.started[batch[0]] = now
	return batch
}

// lane is what an append cannot share a batch with another for: its first
// stream.
func (op *appendOp) lane() string {
	if len(op.keys) == 0 {
		return ""
	}
	return op.keys[0]
}

// release takes one request of lane off a count.
func release(counts map[string]int, lane string) {
	if counts[lane] <= 1 {
		delete(counts, lane)
		return
	}
	counts[lane]--
}

// wakeLocked makes sure claimLocked runs again within wait.
func (a *appender) wakeLocked(now time.Time, wait time.Duration) {
	at := now.Add(wait)
	if a.timer != nil && !a.timerAt.After(at) {
		return
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	a.timer, a.timerAt = time.AfterFunc(wait, a.lingered), at
}

func (a *appender) oldestLocked() time.Time {
	var oldest time.Time
	for _, t := range a.started {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest
}

// lingered starts a batch beside the one in flight once that one ran long.
func (a *appender) lingered() {
	a.mu.Lock()
	a.timer = nil
	var next []*appendOp
	if !a.closed {
		next = a.claimLocked()
	}
	a.mu.Unlock()
	if next != nil {
		a.run(next)
	}
}

// run executes a claimed batch, then starts the next one if requests queued.
func (a *appender) run(batch []*appendOp) {
	a.batches.Add(1)
	a.appends.Add(int64(len(batch)))
	for _, op := range batch {
		a.events.Add(int64(len(op.events)))
	}
	a.execute(batch)
	a.mu.Lock()
	for _, op := range batch {
		for _, k := range op.keys {
			delete(a.busy, k)
		}
	}
	a.inflight--
	for _, op := range batch {
		release(a.waitingLanes, op.lane())
	}
	delete(a.started, batch[0])
	next := a.claimLocked()
	if a.inflight == 0 {
		a.idle.Broadcast()
	}
	a.mu.Unlock()
	if next != nil {
		go a.run(next)
	}
}

// close refuses new appends, answers pending ones with ErrClosed and waits
// for batches in flight.
func (a *appender) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.timer != nil {
		a.timer.Stop()
	}
	for _, op := range a.pending {
		op.respond(AppendResult{}, ErrClosed)
	}
	a.pending = nil
	clear(a.queuedLanes)
	for a.inflight > 0 {
		a.idle.Wait()
	}
}

const maxAttempts = 8

// execute runs a batch to completion, answering every request in it.
func (a *appender) execute(batch []*appendOp) {
	// The batch outlives the callers' contexts: once sent, it commits or not
	// as a whole, and Close waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ops := batch
	refresh := false
	for attempt := 1; len(ops) > 0; attempt++ {
		if attempt > maxAttempts {
			for _, op := range ops {
				op.respond(AppendResult{}, fmt.Errorf("append: gave up after %d attempts against concurrent writers", maxAttempts))
			}
			return
		}
		ops, refresh = a.attempt(ctx, ops, refresh)
	}
}

type row struct {
	op      int
	stream  string
	version int64
}

// attempt tries one transaction for ops. It returns the ops to try again and
// whether their stream heads must be re-read from the database.
func (a *appender) attempt(ctx context.Context, ops []*appendOp, refresh bool) ([]*appendOp, bool) {
	heads, err := a.loadHeads(ctx, ops, refresh)
	if err != nil {
		failAll(ops, err)
		return nil, false
	}
	// A batch with fenced appends runs in an explicit transaction that
	// checks each fence first and holds its lock until the commit; one
	// without runs as one statement, as ever.
	var q querier = a.s.pool
	var tx pgx.Tx
	if hasFence(ops) {
		if tx, err = a.s.pool.Begin(ctx); err != nil {
			failAll(ops, fmt.Errorf("append: %w", err))
			return nil, false
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if ops, err = checkFences(ctx, tx, ops); err != nil {
			failAll(ops, fmt.Errorf("append: %w", err))
			return nil, false
		}
		q = tx
	}

	var (
		live                                []*appendOp
		rows                                []row
		sid, styp, etyp, payload, meta, cmd []string
		actor, tenant, corr                 []string
		ver, sver                           []int64
		at                                  []time.Time
		prev, hash                          [][]byte
		seq                                 []int64
		opResults                           = map[int]*AppendResult{}
	)
	var stale []*appendOp
	for _, op := range ops {
		if conflict := checkExpected(op, heads); conflict != nil {
			if !op.reread {
				// Heads may come from this store's cache, which another
				// process's appends leave behind (the caller read a newer
				// version) and a database that lost its last commits in a
				// failover leaves ahead: read them from the database once
				// before refusing what may well be right.
				for _, st := range op.req.Streams {
					a.heads.forget(st.StreamID)
				}
				op.reread = true
				stale = append(stale, op)
				continue
			}
			op.respond(AppendResult{}, conflict)
			continue
		}
		idx := len(live)
		live = append(live, op)
		now := a.s.opts.Clock().UTC().Truncate(time.Microsecond)
		res := &AppendResult{}
		opResults[idx] = res
		for i, e := range op.events {
			st := op.req.Streams[e.stream]
			h := heads[st.StreamID]
			in := HashInput{
				PrevHash: h.hash, StreamID: st.StreamID, StreamType: st.StreamType, Version: h.version + 1,
				Type: e.typ, SchemaVersion: e.schemaVersion, Payload: e.payload, Metadata: op.metadata,
				CommandID: op.req.CommandID, RecordedAt: now,
			}
			sum := Hash(in)
			heads[st.StreamID] = head{version: in.Version, hash: sum}
			rows = append(rows, row{op: idx, stream: st.StreamID, version: in.Version})
			sid, styp, etyp = append(sid, st.StreamID), append(styp, st.StreamType), append(etyp, e.typ)
			ver, sver = append(ver, in.Version), append(sver, int64(e.schemaVersion))
			payload, meta, cmd = append(payload, string(e.payload)), append(meta, string(op.metadata)), append(cmd, op.req.CommandID)
			at, prev, hash = append(at, now), append(prev, in.PrevHash), append(hash, sum)
			seq = append(seq, int64(i))
			md := op.req.Metadata
			actor, tenant, corr = append(actor, md.Actor), append(tenant, md.Tenant), append(corr, md.CorrelationID)
		}
		for _, st := range op.req.Streams {
			res.Streams = append(res.Streams, StreamVersion{StreamID: st.StreamID, Version: heads[st.StreamID].version})
		}
	}
	if len(live) == 0 {
		return stale, false
	}

	positions, txID, err := a.insert(ctx, q, sid, styp, ver, etyp, sver, payload, meta, cmd, seq, at, prev, hash, actor, tenant, corr)
	if err == nil && tx != nil {
		err = tx.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "events_command":
		return append(a.resolveDuplicates(ctx, live), stale...), false
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "events_stream_version":
		// Another writer (another process) moved a stream: re-read heads.
		for _, op := range live {
			for _, st := range op.req.Streams {
				a.heads.forget(st.StreamID)
			}
		}
		return append(live, stale...), true
	default:
		failAll(live, fmt.Errorf("append: %w", err))
		return stale, false
	}

	for i, r := range rows {
		res := opResults[r.op]
		c := Cursor{TxID: txID, Position: positions[i]}
		if res.Cursor.Less(c) {
			res.Cursor = c
		}
	}
	// Only the streams this batch wrote: a stream of an op set aside as
	// stale still has its cached head here, which was just forgotten so
	// that the op's next attempt reads it from the database; putting it
	// back would refuse that attempt with the same stale version.
	for _, r := range rows {
		a.heads.put(r.stream, heads[r.stream])
	}
	for i, op := range live {
		op.respond(*opResults[i], nil)
	}
	if len(rows) > 0 {
		a.s.notifier.committed()
	}
	return stale, false
}

func hasFence(ops []*appendOp) bool {
	for _, op := range ops {
		if op.req.Fence != nil {
			return true
		}
	}
	return false
}

// checkFences checks each distinct fence of the batch once in tx, answers
// the appends whose fence does not hold, and returns the others. An error
// is one of the database, not of a fence, and leaves every append
// unanswered.
func checkFences(ctx context.Context, tx pgx.Tx, ops []*appendOp) ([]*appendOp, error) {
	verdict := map[string]error{}
	for _, op := range ops {
		f := op.req.Fence
		if f == nil {
			continue
		}
		if _, done := verdict[f.Key()]; done {
			continue
		}
		err := f.Check(ctx, tx)
		var fenced *FencedError
		if err != nil && !errors.As(err, &fenced) {
			return ops, err
		}
		verdict[f.Key()] = err
	}
	live := ops[:0:0]
	for _, op := range ops {
		if f := op.req.Fence; f != nil && verdict[f.Key()] != nil {
			op.respond(AppendResult{}, verdict[f.Key()])
			continue
		}
		live = append(live, op)
	}
	return live, nil
}

func failAll(ops []*appendOp, err error) {
	for _, op := range ops {
		op.respond(AppendResult{}, err)
	}
}

func checkExpected(op *appendOp, heads map[string]head) error {
	for _, st := range op.req.Streams {
		h := heads[st.StreamID]
		if st.Expected != AnyVersion && int64(st.Expected) != h.version {
			return &VersionConflictError{StreamID: st.StreamID, Expected: st.Expected, Actual: h.version}
		}
	}
	return nil
}

// insert writes the batch's events in one statement, one round trip, in its
// own transaction. It does not NOTIFY inside the transaction: PostgreSQL
// serialises the commits of notifying transactions, WAL flush included,
// which would defeat group commit.
func (a *appender) insert(ctx context.Context, q querier, args ...any) ([]int64, uint64, error) {
	rows, err := q.Query(ctx, `
		INSERT INTO events (stream_id, stream_type, version, event_type, schema_version, payload, metadata,
		                    command_id, command_seq, recorded_at, prev_hash, hash, actor, tenant, correlation_id)
		SELECT s, t, v, e, sv, p::json, m::json, NULLIF(c, ''), CASE WHEN c = '' THEN NULL ELSE cs END, a, ph, h,
		       NULLIF(ac, ''), NULLIF(tn, ''), NULLIF(co, '')
		FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::text[], $7::text[],
		            $8::text[], $9::int[], $10::timestamptz[], $11::bytea[], $12::bytea[],
		            $13::text[], $14::text[], $15::text[])
		  AS u(s, t, v, e, sv, p, m, c, cs, a, ph, h, ac, tn, co)
		RETURNING position, tx_id`, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var positions []int64
	var txID uint64
	for rows.Next() {
		var pos int64
		if err := rows.Scan(&pos, &txID); err != nil {
			return nil, 0, err
		}
		positions = append(positions, pos)
	}
	return positions, txID, rows.Err()
}

// loadHeads returns the current head of every stream in ops, from the cache
// where it can and from the database for the rest.
func (a *appender) loadHeads(ctx context.Context, ops []*appendOp, refresh bool) (map[string]head, error) {
	heads := map[string]head{}
	var missing []string
	for _, op := range ops {
		for _, st := range op.req.Streams {
			if h, ok := a.heads.get(st.StreamID); ok && !refresh {
				heads[st.StreamID] = h
			} else if st.Expected == NoStream && !refresh {
				// A creation needs no read: if the stream exists after all,
				// the insert hits the unique index and the retry re-reads.
				heads[st.StreamID] = head{hash: ZeroHash}
			} else {
				missing = append(missing, st.StreamID)
			}
		}
	}
	if len(missing) == 0 {
		return heads, nil
	}
	rs, err := a.s.pool.Query(ctx, `
		SELECT s.id, coalesce(h.version, 0), coalesce(h.hash, $2)
		FROM unnest($1::text[]) AS s(id)
		LEFT JOIN LATERAL (
			SELECT version, hash FROM events WHERE stream_id = s.id ORDER BY version DESC LIMIT 1
		) h ON true`, missing, ZeroHash)
	if err != nil {
		return nil, fmt.Errorf("append: read stream heads: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var id string
		var h head
		if err := rs.Scan(&id, &h.version, &h.hash); err != nil {
			return nil, fmt.Errorf("append: read stream heads: %w", err)
		}
		heads[id] = h
		if h.version > 0 {
			a.heads.put(id, h)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("append: read stream heads: %w", err)
	}
	return heads, nil
}

// resolveDuplicates answers the ops whose command id was already recorded and
// returns the others to be tried again.
func (a *appender) resolveDuplicates(ctx context.Context, ops []*appendOp) []*appendOp {
	var retry []*appendOp
	for _, op := range ops {
		if op.req.CommandID == "" {
			retry = append(retry, op)
			continue
		}
		res, fp, found, err := a.s.commandResult(ctx, op.req.CommandID)
		switch {
		case err != nil:
			op.respond(AppendResult{}, err)
		case !found:
			retry = append(retry, op)
		case string(fp) != string(op.fingerprint):
			op.respond(AppendResult{}, &CommandReusedError{CommandID: op.req.CommandID})
		default:
			op.respond(res, nil)
		}
	}
	return retry
}

// CommandResult returns the result of an earlier command with this id, if any.
// Command handlers call it before deciding, so a retried command is answered
// without running its decision again; fingerprint must match the first one.
func (s *Store) CommandResult(ctx context.Context, commandID string, fingerprint []byte) (AppendResult, bool, error) {
	res, fp, found, err := s.commandResult(ctx, commandID)
	if err != nil || !found {
		return AppendResult{}, false, err
	}
	if string(fp) != string(fingerprint) {
		return AppendResult{}, true, &CommandReusedError{CommandID: commandID}
	}
	return res, true, nil
}

func (s *Store) commandResult(ctx context.Context, commandID string) (AppendResult, []byte, bool, error) {
	rs, err := s.pool.Query(ctx, `
		SELECT metadata->>'commandFingerprint', stream_id, version, position, tx_id
		FROM events WHERE command_id = $1 ORDER BY position`, commandID)
	if err != nil {
		return AppendResult{}, nil, false, fmt.Errorf("read command %q: %w", commandID, err)
	}
	defer rs.Close()
	res := AppendResult{Duplicate: true}
	var fp []byte
	found := false
	versions := map[string]int64{}
	var order []string
	for rs.Next() {
		found = true
		var fpHex, stream string
		var version, pos int64
		var tx uint64
		if err := rs.Scan(&fpHex, &stream, &version, &pos, &tx); err != nil {
			return AppendResult{}, nil, false, fmt.Errorf("read command %q: %w", commandID, err)
		}
		if fp, err = hex.DecodeString(fpHex); err != nil {
			return AppendResult{}, nil, false, fmt.Errorf("read command %q: fingerprint: %w", commandID, err)
		}
		if _, ok := versions[stream]; !ok {
			order = append(order, stream)
		}
		versions[stream] = max(versions[stream], version)
		if c := (Cursor{TxID: tx, Position: pos}); res.Cursor.Less(c) {
			res.Cursor = c
		}
	}
	if err := rs.Err(); err != nil {
		return AppendResult{}, nil, false, fmt.Errorf("read command %q: %w", commandID, err)
	}
	for _, st := range order {
		res.Streams = append(res.Streams, StreamVersion{StreamID: st, Version: versions[st]})
	}
	return res, fp, found, nil
}

// Stats counts the store's work since it started.
type Stats struct {
	Batches int64 // transactions run
	Appends int64 // append requests (commands) they carried
	Events  int64
	// TailReads are the subscriptions' reads of the log made, TailReadsShared
	// those that took another's read instead, RecentServed the events given
	// out of the window of recent events instead of read, and EventsRead
	// the events the subscriptions read from the database.
	TailReads, TailReadsShared, RecentServed, EventsRead int64
}

// Stats reports how appends were grouped into transactions and how the
// subscriptions' reads were shared.
func (s *Store) Stats() Stats {
	return Stats{
		Batches: s.appender.batches.Load(), Appends: s.appender.appends.Load(), Events: s.appender.events.Load(),
		TailReads: s.tail.ran.Load(), TailReadsShared: s.tail.joined.Load(), RecentServed: s.recent.served.Load(),
		EventsRead: s.recent.read.Load(),
	}
}
