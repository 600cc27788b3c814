package sal

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// TCPCheckResult is the outcome of a TCP connect check. An unreachable
// target is a result, not an error.
type TCPCheckResult struct {
	Address   string        `json:"address"`
	Reachable bool          `json:"reachable"`
	Latency   time.Duration `json:"latency_ns"` // time to connect, or to fail
	Error     string        `json:"error,omitempty"`
}

// defaultTCPTimeout applies when TCPConnect is given no timeout.
const defaultTCPTimeout = 3 * time.Second

// TCPConnect opens and closes a TCP connection to host:port. The error is
// non-nil only for arguments that cannot be checked.
func (s *System) TCPConnect(ctx context.Context, host string, port int, timeout time.Duration) (TCPCheckResult, error) {
	if host == "" {
		return TCPCheckResult{}, fmt.Errorf("sal: tcp check: %w: host is empty", ErrInvalidSpec)
	}
	if port < 1 || port > 65535 {
		return TCPCheckResult{}, fmt.Errorf("sal: tcp check: %w: port %d is outside 1-65535", ErrInvalidSpec, port)
	}
	if timeout <= 0 {
		timeout = defaultTCPTimeout
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	d := net.Dialer{Timeout: timeout}
	start := time.Now()
	conn, err := d.DialContext(ctx, "tcp", addr)
	res := TCPCheckResult{Address: addr, Latency: time.Since(start)}
	if err != nil {
		res.Error = err.Error()
		return res, nil
	}
	_ = conn.Close()
	res.Reachable = true
	return res, nil
}

// DNSLookup resolves name to its addresses, sorted, with the system resolver.
func (s *System) DNSLookup(ctx context.Context, name string) ([]string, error) {
	if name == "" {
		return nil, fmt.Errorf("sal: dns lookup: %w: name is empty", ErrInvalidSpec)
	}
	var r net.Resolver
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("sal: dns lookup of %s: %w", name, err)
	}
	sort.Strings(addrs)
	return addrs, nil
}

// HTTPCheckResult is the outcome of an HTTP GET check. A server that does
// not answer, or answers another status than expected, is a result, not an
// error.
type HTTPCheckResult struct {
	URL     string        `json:"url"`
	Status  int           `json:"status"`
	Healthy bool          `json:"healthy"`
	Latency time.Duration `json:"latency_ns"`
	Error   string        `json:"error,omitempty"`
}

// HTTPGet sends a GET to url (http or https, certificates not verified: a
// health check asks whether the service answers, not whom to trust) and
// reports whether the status is the expected one (200 when 0). Redirects
// are not followed. The error is non-nil only for a URL that cannot be
// checked.
func (s *System) HTTPGet(ctx context.Context, rawURL string, expect int, timeout time.Duration) (HTTPCheckResult, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return HTTPCheckResult{}, fmt.Errorf("sal: http check: %w: %q is not an http(s) URL", ErrInvalidSpec, rawURL)
	}
	if timeout <= 0 {
		timeout = defaultTCPTimeout
	}
	if expect == 0 {
		expect = http.StatusOK
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return HTTPCheckResult{}, fmt.Errorf("sal: http check: %w: %v", ErrInvalidSpec, err)
	}
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a liveness probe
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	start := time.Now()
	resp, err := client.Do(req)
	res := HTTPCheckResult{URL: u.String(), Latency: time.Since(start)}
	if err != nil {
		res.Error = err.Error()
		return res, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	res.Status = resp.StatusCode
	res.Healthy = resp.StatusCode == expect
	if !res.Healthy {
		res.Error = fmt.Sprintf("answered %d, not %d", resp.StatusCode, expect)
	}
	return res, nil
}
