package client

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
)

// endpoints are the replicas a client may talk to, and the one it talks to
// now. Copies of a client (WithToken, ...) share them, so a move to another
// replica holds for all of them.
type endpoints struct {
	urls    []string
	current atomic.Int64
}

// parseEndpoints turns "http://a:8080, http://b:8080" (or one URL) into
// GraphQL endpoints.
func parseEndpoints(baseURLs string) *endpoints {
	var urls []string
	for _, u := range strings.Split(baseURLs, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		if !strings.HasSuffix(u, "/graphql") {
			u += "/graphql"
		}
		urls = append(urls, u)
	}
	if len(urls) == 0 {
		urls = []string{"/graphql"}
	}
	return &endpoints{urls: urls}
}

// now is the endpoint requests go to.
func (e *endpoints) now() string { return e.urls[int(e.current.Load())%len(e.urls)] }

// failed moves on from url to the next replica, unless another request has
// moved on already.
func (e *endpoints) failed(url string) {
	i := e.current.Load()
	if e.urls[int(i)%len(e.urls)] == url {
		e.current.CompareAndSwap(i, i+1)
	}
}

// refused reports an error that means the request never reached a server:
// nothing was run, so another replica may be asked at once.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
