package main

import (
	"cairn/internal/httpserver"
	"cairn/web"
)

// mountPortal serves the web portal (web/) at /: every path the server's
// other routes leave, so that the app's own addresses (/nodes/n1, ...) load
// it too. The pattern has no method, so it never overlaps a more specific
// route; the handler itself answers only GET and HEAD.
func mountPortal(srv *httpserver.Server) {
	srv.Handle("/", web.Handler())
}
