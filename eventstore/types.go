package eventstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cairn/domain"
)

// ExpectedVersion states what the caller believes a stream's version is.
type ExpectedVersion int64

const (
	// AnyVersion appends whatever the stream's version.
	AnyVersion ExpectedVersion = -1
	// NoStream requires that the stream has no events yet.
	NoStream ExpectedVersion = 0
)

// Exactly requires the stream to be at version n (n = 0 is NoStream).
func Exactly(n int64) ExpectedVersion { return ExpectedVersion(n) }

func (v ExpectedVersion) String() string {
	switch {
	case v == AnyVersion:
		return "any version"
	case v == NoStream:
		return "no stream"
	default:
		return fmt.Sprintf("version %d", int64(v))
	}
}

// Metadata travels with every event of a command.
type Metadata struct {
	CommandID     string `json:"commandId,omitempty"`
	CorrelationID string `json:"correlationId,omitempty"`
	CausationID   string `json:"causationId,omitempty"`
	Actor         string `json:"actor,omitempty"`
	Tenant        string `json:"tenant,omitempty"`
	// CommandFingerprint (hex) identifies the command's input, so a retry
	// with the same id and another input can be told apart.
	CommandFingerprint string            `json:"commandFingerprint,omitempty"`
	Extra              map[string]string `json:"extra,omitempty"`
}

// StreamAppend is the part of an append aimed at one stream.
type StreamAppend struct {
	StreamID   string
	StreamType string
	Expected   ExpectedVersion
	Events     []domain.Event
}

// AppendRequest is one command's output: events for one or more streams,
// appended atomically.
type AppendRequest struct {
	// CommandID makes the append idempotent: a second request with the same id
	// appends nothing and returns the first result.
	CommandID string
	// Fingerprint identifies the command's input. A retry with the same
	// CommandID and a different Fingerprint is refused. Empty: derived from
	// the events, which is only right when they carry no timestamps.
	Fingerprint []byte
	Metadata    Metadata
	Streams     []StreamAppend
	// Fence, when set, must hold in the append's transaction (see Fence);
	// an append made with a context of WithFence carries that one.
	Fence Fence
}

// StreamVersion is a stream's version after an append.
type StreamVersion struct {
	StreamID string
	Version  int64
}

// AppendResult says where a command's events landed.
type AppendResult struct {
	// Cursor of the command's last event (zero when it appended none).
	Cursor  Cursor
	Streams []StreamVersion
	// Duplicate is true when the command id had been seen: nothing was appended
	// and the first append's result is returned.
	Duplicate bool
}

// RecordedEvent is an event as stored in the log.
type RecordedEvent struct {
	Position      int64
	TxID          uint64
	StreamID      string
	StreamType    string
	Version       int64
	Type          string
	SchemaVersion int
	// Payload holds the exact stored bytes, at SchemaVersion; Store.Decode
	// upcasts it to the current version.
	Payload     json.RawMessage
	RawMetadata json.RawMessage
	Metadata    Metadata
	CommandID   string
	RecordedAt  time.Time
	PrevHash    []byte
	Hash        []byte
}

// Cursor is the event's place in global order.
func (e RecordedEvent) Cursor() Cursor { return Cursor{TxID: e.TxID, Position: e.Position} }

// VersionConflictError: the stream was not at the expected version.
type VersionConflictError struct {
	StreamID string
	Expected ExpectedVersion
	Actual   int64
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("stream %q changed concurrently: expected %s, found version %d; reload and retry", e.StreamID, e.Expected, e.Actual)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *VersionConflictError) Is(target error) bool { return target == domain.ErrConflict }

// CommandReusedError: a command id was sent again with a different input.
type CommandReusedError struct{ CommandID string }

func (e *CommandReusedError) Error() string {
	return fmt.Sprintf("command id %q was already used for a different command: use a new id for a new command", e.CommandID)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *CommandReusedError) Is(target error) bool { return target == domain.ErrConflict }

// StreamNotFoundError: the stream has no events (at the requested point).
type StreamNotFoundError struct{ StreamID string }

func (e *StreamNotFoundError) Error() string {
	return fmt.Sprintf("stream %q does not exist", e.StreamID)
}

// Is makes errors.Is(err, domain.ErrNotFound) true.
func (e *StreamNotFoundError) Is(target error) bool { return target == domain.ErrNotFound }

// ErrEmptyAppend is returned for a request with neither events nor a command id.
var ErrEmptyAppend = errors.New("nothing to append: the request has no events and no command id")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("event store is closed")
