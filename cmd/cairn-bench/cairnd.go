package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"cairn/internal/database"
)

// servedCairnd is a cairnd built from this tree, serving a database of its
// own on the benchmark's cluster, as operators run it.
type servedCairnd struct {
	url, token string
	debug      string // where its runtime profiles are served
	profiles   string // folder to keep heap profiles in; "": none
	bin        string // where the commands were built
	pid        int
	stop       func()
}

// startCairnd builds cairnd and the other commands named (./cmd/...) into
// work/bin, makes a database for it, and starts `cairnd serve` with args
// once it is ready with its first administrator token.
func startCairnd(ctx context.Context, e *env, work, dbPrefix string, commands []string, args ...string) (*servedCairnd, error) {
	bin := filepath.Join(work, "bin")
	build := append([]string{"build", "-o", bin + "/", "./cmd/cairnd"}, commands...)
	if out, err := exec.CommandContext(ctx, "go", build...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build cairnd %v: %v\n%s", commands, err, out)
	}
	cc := e.admin.Config().ConnConfig
	dsn := func(db string) string {
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", cc.Host, cc.Port, cc.User, db)
	}
	dbName := fmt.Sprintf("%s_%d", dbPrefix, time.Now().UnixNano())
	if err := database.CreateDatabase(ctx, dsn("postgres"), dbName, ""); err != nil {
		return nil, err
	}
	addr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	var logs bytes.Buffer
	debug := e.cfg.cairndDebug
	if debug == "" {
		if debug, err = freeAddress(); err != nil {
			return nil, err
		}
	}
	args = append(args, "--debug-listen", debug)
	srv := exec.CommandContext(ctx, filepath.Join(bin, "cairnd"), append([]string{"serve", "--listen", addr,
		"--data-dir", filepath.Join(work, "data"), "--log-format", "json"}, args...)...)
	srv.Env = append(os.Environ(), "DATABASE_URL="+dsn(dbName))
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}
	url := "http://" + addr
	token, err := waitReady(ctx, url, &logs)
	if err != nil {
		stop()
		return nil, err
	}
	return &servedCairnd{url: url, token: token, debug: debug, profiles: e.cfg.heapProfiles, bin: bin, pid: srv.Process.Pid, stop: stop}, nil
}

// httpGet is the body of a successful GET of url.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// metrics are the values of unlabelled metrics cairnd exposes now, in the
// order of names, from one scrape.
func (s *servedCairnd) metrics(ctx context.Context, names ...string) ([]float64, error) {
	b, err := httpGet(ctx, s.url+"/metrics")
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(names))
	for i, name := range names {
		if out[i], err = metricValue(b, name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// freeAddress is a local address no one listens on now.
func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// liveMemory is the heap in use and the goroutine stacks of the served
// cairnd after collections (its heap profile, asked with gc=1, runs one):
// what its connections cost that it cannot give back, without the garbage
// a resident set also holds until the next collection. It asks for
// several, as an idle server has had within minutes (Go collects at least
// every two): each collection halves at most once the stacks of goroutines
// that use a quarter of theirs, so one alone leaves the stacks that grew
// while the connections were set up.
// idleCollections is how many collections liveMemory asks for.
const idleCollections = 3

func (s *servedCairnd) liveMemory(ctx context.Context, label string) (liveMemory, error) {
	var heap []byte
	for range idleCollections {
		var err error
		if heap, err = httpGet(ctx, "http://"+s.debug+"/debug/pprof/heap?gc=1"); err != nil {
			return liveMemory{}, err
		}
	}
	if s.profiles != "" {
		if err := os.WriteFile(filepath.Join(s.profiles, label+".pb.gz"), heap, 0o644); err != nil {
			return liveMemory{}, err
		}
	}
	v, err := s.metrics(ctx, "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_stack_inuse_bytes")
	if err != nil {
		return liveMemory{}, err
	}
	return liveMemory{heapInuse: int64(v[0]), heapLive: int64(v[1]), stacks: int64(v[2])}, nil
}

// liveMemory is a process's memory as its runtime sees it.
type liveMemory struct {
	heapInuse int64 // spans holding at least one live object
	heapLive  int64 // the live objects themselves
	stacks    int64
}

// total is what the figures count: the heap's spans in use and stacks.
func (m liveMemory) total() int64 { return m.heapInuse + m.stacks }

// perEach is the kibibytes each of n added, from before to m: spans in
// use, live objects and stacks.
func (m liveMemory) perEach(before liveMemory, n int) (spans, objects, stacks float64) {
	per := func(v int64) float64 { return round(float64(v)/1024/float64(n), 1) }
	return per(m.heapInuse - before.heapInuse), per(m.heapLive - before.heapLive), per(m.stacks - before.stacks)
}

// cpuProfile records the served cairnd's CPU profile for d (or until wait
// is called) into the profiles folder under label, when one is given;
// wait returns once it is written.
func (s *servedCairnd) cpuProfile(ctx context.Context, label string, d time.Duration) (wait func() error) {
	if s.profiles == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.debug, int(d.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(filepath.Join(s.profiles, label+".pb.gz"), b, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// metricValue reads an unlabelled metric from a Prometheus text exposition.
func metricValue(exposition []byte, name string) (float64, error) {
	for line := range strings.SplitSeq(string(exposition), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("/metrics has no %s", name)
}

// benchSideProfile records this process's CPU (the simulated agents or
// subscribers driving cairnd) into dir/name.pb.gz until the returned
// function is called, when profiles are kept: on one machine their CPU is
// CPU the server does not get. A whole-run -cpuprofile already recording
// takes precedence.
func benchSideProfile(e *env, dir, name string) func() {
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
	if err != nil {
		e.log.Warn().Err(err).Msg("no CPU profile of the bench's side")
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		e.log.Warn().Err(err).Msg("no CPU profile of the bench's side")
		f.Close()
		os.Remove(f.Name())
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			e.log.Warn().Err(err).Msg("the bench's side CPU profile")
		}
	}
}
