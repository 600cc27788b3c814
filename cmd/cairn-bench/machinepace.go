package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// referenceWorkEnv names the child process that times the reference work:
// a process of its own, so that neither the heap nor the collector of the
// bench (which drives 10,000 agents) weighs on it.
const referenceWorkEnv = "CAIRN_BENCH_REFERENCE_WORK"

// runReferenceWork is that child: once told to (its stdin closes), it
// prints the reference work's best time in microseconds.
func runReferenceWork(string) error {
	readyUntilEnd()
	fmt.Println(bestReferenceWork().Microseconds())
	return nil
}

// machinePace times the reference work in a child process, now.
func machinePace(ctx context.Context) (time.Duration, error) {
	c, err := startChild(ctx, referenceWorkEnv, struct{}{})
	if err != nil {
		return 0, fmt.Errorf("start the reference work: %w", err)
	}
	report, err := c.stop()
	if err != nil {
		return 0, fmt.Errorf("the reference work: %w", err)
	}
	us, err := strconv.ParseInt(strings.TrimSpace(report), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the reference work reported %q: %w", report, err)
	}
	return time.Duration(us) * time.Microsecond, nil
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
