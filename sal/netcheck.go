package sal

import (
	"context"
	"fmt"
	"net"
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
