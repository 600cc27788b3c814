package sal

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

func TestTCPConnect(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := ln.Addr().(*net.TCPAddr).Port

	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := closedLn.Addr().(*net.TCPAddr).Port
	closedLn.Close()

	tests := []struct {
		name      string
		port      int
		reachable bool
	}{
		{"listening", open, true},
		{"closed", closed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A refused port answers at once; the generous timeout only
			// keeps a loaded machine from failing the open one.
			res, err := s.TCPConnect(context.Background(), "127.0.0.1", tt.port, wait)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reachable != tt.reachable || (res.Error == "") != tt.reachable || res.Latency <= 0 {
				t.Errorf("got %+v", res)
			}
		})
	}
	for _, port := range []int{0, 70000} {
		if _, err := s.TCPConnect(context.Background(), "127.0.0.1", port, time.Second); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("port %d: want ErrInvalidSpec, got %v", port, err)
		}
	}
}

func TestDNSLookup(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	addrs, err := s.DNSLookup(context.Background(), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(addrs, "127.0.0.1") && !slices.Contains(addrs, "::1") {
		t.Errorf("localhost resolved to %v", addrs)
	}
	if _, err := s.DNSLookup(context.Background(), ""); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("empty name: %v", err)
	}
}

// An HTTP check reports the status, healthy when it is the one expected,
// and a server that is not there as unhealthy, not as an error.
func TestHTTPGet(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	s, _ := newTestSystem(t)
	ctx := context.Background()
	tests := []struct {
		url     string
		expect  int
		healthy bool
		status  int
	}{
		{srv.URL + "/", 0, true, 200},
		{srv.URL + "/down", 0, false, 503},
		{srv.URL + "/down", 503, true, 503},
		{"http://127.0.0.1:1/", 0, false, 0},
	}
	for _, tc := range tests {
		res, err := s.HTTPGet(ctx, tc.url, tc.expect, time.Second)
		if err != nil || res.Healthy != tc.healthy || res.Status != tc.status {
			t.Errorf("%s (expect %d): %+v %v", tc.url, tc.expect, res, err)
		}
	}
	if _, err := s.HTTPGet(ctx, "ftp://x/", 0, time.Second); err == nil {
		t.Error("an ftp URL was checked")
	}
}
