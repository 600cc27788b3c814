// Package domain holds Cairn's aggregates as pure deciders and evolvers.
//
// Nothing in domain/ does I/O, reads a clock or draws random numbers: time and
// identifiers arrive inside commands. Subpackages hold one aggregate each.
package domain

// Event is a fact that happened to one aggregate. Its Go value is the payload
// that is stored as JSON in the event log; EventType names it in the log.
type Event interface {
	EventType() string
}
