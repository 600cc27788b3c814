// Package web holds Cairn's portal: a single-page app (the operator, tenant
// and auditor areas) built from web/src by Vite into static/dist and embedded
// into cairnd, which serves it at / with Handler.
//
// A cairnd compiled before the app was built still compiles and serves a
// page that says how to build it (static/notbuilt.html).
package web

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:static
var static embed.FS

// Built reports whether the portal's assets were built into this binary.
func Built() bool {
	_, err := fs.Stat(static, "static/dist/index.html")
	return err == nil
}

// Handler serves the portal: files of the build as they are, and index.html
// for every other path, so that the app's own addresses (/nodes/n1, ...)
// load it and it shows the page. Hashed assets under /assets/ are cached for
// good; everything else is revalidated on each load. Missing paths under
// /assets/ or with a static file's extension (.js, .css, ...) are 404s, so
// that a missing script is never answered with HTML. Without a build, every path is
// answered with a page that says how to build it.
func Handler() http.Handler {
	if !Built() {
		page, err := static.ReadFile("static/notbuilt.html")
		if err != nil {
			panic("web: static/notbuilt.html is missing: " + err.Error())
		}
		return notBuilt(page)
	}
	dist, err := fs.Sub(static, "static/dist")
	if err != nil {
		panic("web: " + err.Error())
	}
	return spa(dist)
}

func notBuilt(page []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusServiceUnavailable)
		if r.Method == http.MethodGet {
			_, _ = w.Write(page)
		}
	})
}

// modTime is the time served assets claim: embedded files have none, and a
// fixed one lets If-Modified-Since work within one build.
var modTime = time.Now()

func spa(dist fs.FS) http.Handler {
	index, err := fs.ReadFile(dist, "index.html")
	if err != nil {
		panic("web: the build has no index.html: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if data, err := fs.ReadFile(dist, name); err == nil {
				if strings.HasPrefix(name, "assets/") {
					// Vite names these after a hash of their content.
					h.Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					h.Set("Cache-Control", "no-cache")
				}
				http.ServeContent(w, r, name, modTime, bytes.NewReader(data))
				return
			}
			if strings.HasPrefix(name, "assets/") || fileExts[path.Ext(name)] {
				h.Set("Cache-Control", "no-store")
				http.NotFound(w, r)
				return
			}
		}
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, "index.html", modTime, bytes.NewReader(index))
	})
}

// fileExts are the extensions of files a build may hold. A missing path with
// one of them is a 404; any other path is one of the app's addresses, which
// may well contain dots (/catalog/postgres/1.4.2).
var fileExts = map[string]bool{
	".js": true, ".mjs": true, ".css": true, ".map": true, ".html": true, ".json": true,
	".txt": true, ".ico": true, ".png": true, ".svg": true, ".jpg": true, ".webp": true,
	".woff": true, ".woff2": true, ".webmanifest": true, ".wasm": true,
}

func methodNotAllowed(w http.ResponseWriter) {
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}
