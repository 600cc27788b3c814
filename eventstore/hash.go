package eventstore

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// ZeroHash is the previous hash of every stream's first event.
var ZeroHash = make([]byte, sha256.Size)

// HashInput is what an event's hash covers. The position and transaction id
// are assigned by PostgreSQL and are not part of it.
type HashInput struct {
	PrevHash      []byte
	StreamID      string
	StreamType    string
	Version       int64
	Type          string
	SchemaVersion int
	Payload       []byte
	Metadata      []byte
	CommandID     string
	RecordedAt    time.Time
}

// Hash computes an event's link in its stream's chain: SHA-256 over a
// domain-separation tag and every field, each length-prefixed so no two
// different events encode alike. docs/audit.md documents the layout.
func Hash(in HashInput) []byte {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	num := func(v int64) {
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	h.Write([]byte("cairn-event-v1"))
	field(in.PrevHash)
	field([]byte(in.StreamID))
	field([]byte(in.StreamType))
	num(in.Version)
	field([]byte(in.Type))
	num(int64(in.SchemaVersion))
	field(in.Payload)
	field(in.Metadata)
	field([]byte(in.CommandID))
	num(in.RecordedAt.UnixMicro())
	return h.Sum(nil)
}

// HashOf recomputes a recorded event's hash.
func HashOf(e RecordedEvent) []byte {
	return Hash(HashInput{
		PrevHash: e.PrevHash, StreamID: e.StreamID, StreamType: e.StreamType, Version: e.Version,
		Type: e.Type, SchemaVersion: e.SchemaVersion, Payload: e.Payload, Metadata: e.RawMetadata,
		CommandID: e.CommandID, RecordedAt: e.RecordedAt,
	})
}
