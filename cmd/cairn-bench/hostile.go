package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"cairn/graph/hostile"
)

// hostilePasses is how often the corpus is sent; the figures are the
// slowest answer of any pass and the CPU time of one pass.
const (
	hostilePasses  = 3
	hostileMaxBody = 100 << 10
)

// benchHostile sends the API's hostile corpus (graph/hostile), each
// document at most 100 KB, and measures the slowest answer and the CPU time
// the whole corpus costs. The server runs in this process, so the CPU time
// includes the client's share, which is small: it sends prepared bodies.
func benchHostile(ctx context.Context, s *graphqlServer) (result, error) {
	var corpus []hostile.Request
	for _, h := range hostile.Corpus() {
		if h.Stream == nil && len(h.Body) <= hostileMaxBody {
			corpus = append(corpus, h)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	cpuBefore, err := cpuTime()
	if err != nil {
		return nil, err
	}
	var slowest time.Duration
	var slowestName string
	for range hostilePasses {
		for _, h := range corpus {
			d, err := sendHostile(ctx, client, s, h)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
			if d > slowest {
				slowest, slowestName = d, h.Name
			}
		}
	}
	cpuAfter, err := cpuTime()
	if err != nil {
		return nil, err
	}
	return result{
		"hostile_requests":       len(corpus),
		"hostile_request_max_ms": gqlMS(slowest),
		"hostile_slowest":        slowestName,
		"hostile_cpu_seconds":    round((cpuAfter-cpuBefore).Seconds()/hostilePasses, 3),
	}, nil
}

// sendHostile sends one request and checks it got the answer the corpus
// says, returning how long the answer took.
func sendHostile(ctx context.Context, client *http.Client, s *graphqlServer, h hostile.Request) (time.Duration, error) {
	// Every signed-in caller of the corpus is the administrator here.
	req, err := h.NewRequest(ctx, s.url+"/graphql", s.token)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	var answer struct {
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(out, &answer)
	if resp.StatusCode != h.Status || len(answer.Errors) == 0 || answer.Errors[0].Extensions["code"] != h.Code {
		return 0, fmt.Errorf("HTTP %d %.200s, want %d with %s", resp.StatusCode, out, h.Status, h.Code)
	}
	return d, nil
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("read the CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
