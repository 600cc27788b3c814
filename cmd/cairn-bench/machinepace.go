package main

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"time"
)

// referenceWork times a fixed piece of work on one core: building a map of
// string keys, sorting them and hashing them, a mix of allocation, memory
// and arithmetic like the server's own. Its time says how fast the machine
// ran just then: on a shared virtual machine the same code's fan-out varies
// by half from one run to the next, and the reference moves with it.
func referenceWork() time.Duration {
	began := time.Now()
	const keys = 50_000
	seen := make(map[string]int, 1024)
	list := make([]string, 0, 1024)
	for i := range keys {
		k := "node-" + strconv.Itoa(i*7919%keys)
		seen[k] = i
		list = append(list, k)
	}
	slices.Sort(list)
	h := sha256.New()
	for _, k := range list {
		h.Write([]byte(k))
		h.Write([]byte(strconv.Itoa(seen[k])))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return time.Since(began)
}

// bestReferenceWork is the shortest of three runs of referenceWork: the
// machine's pace then, without a single preemption's noise.
func bestReferenceWork() time.Duration {
	best := referenceWork()
	for range 2 {
		best = min(best, referenceWork())
	}
	return best
}
