// Package graphiql serves GraphiQL from cairnd itself: its scripts and
// styles are embedded (MIT-licensed bundles of graphiql, react and
// react-dom, licences alongside), so the page works without reaching any
// other host.
package graphiql

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves GraphiQL. Mount it under a prefix ending in a slash, such as
// "/graphiql/", with the prefix stripped; it talks to "../graphql".
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page runs inline React from its own origin only.
		w.Header().Set("Content-Security-Policy",
			"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}
