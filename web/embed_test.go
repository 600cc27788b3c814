package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func testDist() fstest.MapFS {
	return fstest.MapFS{
		"index.html":           {Data: []byte("<!doctype html><div id=root></div>")},
		"assets/index-abc.js":  {Data: []byte("console.log(1)")},
		"assets/index-abc.css": {Data: []byte("body{}")},
		"robots.txt":           {Data: []byte("User-agent: *")},
	}
}

func get(t *testing.T, h http.Handler, method, target string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSPAServesFilesAndFallsBackToIndex(t *testing.T) {
	h := spa(testDist())
	cases := []struct {
		target, wantBody, wantCache string
		wantStatus                  int
	}{
		{"/", "<!doctype html>", "no-cache", 200},
		{"/index.html", "<!doctype html>", "no-cache", 200},
		{"/nodes", "<!doctype html>", "no-cache", 200},
		{"/nodes/n1?range=6h", "<!doctype html>", "no-cache", 200},
		{"/catalog/postgres/1.4.2", "<!doctype html>", "no-cache", 200},
		{"/assets/index-abc.js", "console.log(1)", "public, max-age=31536000, immutable", 200},
		{"/assets/index-abc.css", "body{}", "public, max-age=31536000, immutable", 200},
		{"/robots.txt", "User-agent", "no-cache", 200},
		{"/assets/gone.js", "404", "no-store", 404},
		{"/assets/gone", "404", "no-store", 404},
		{"/old-bundle.js", "404", "no-store", 404},
		{"/../../etc/passwd", "<!doctype html>", "no-cache", 200},
	}
	for _, c := range cases {
		res := get(t, h, http.MethodGet, c.target)
		if res.StatusCode != c.wantStatus {
			t.Errorf("GET %s: status %d, want %d", c.target, res.StatusCode, c.wantStatus)
		}
		if got := res.Header.Get("Cache-Control"); got != c.wantCache {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.target, got, c.wantCache)
		}
		if b := body(t, res); !strings.Contains(b, c.wantBody) {
			t.Errorf("GET %s: body %q, want it to contain %q", c.target, b, c.wantBody)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff header", c.target)
		}
	}
}

func TestSPAContentTypes(t *testing.T) {
	h := spa(testDist())
	for target, want := range map[string]string{
		"/nodes":                "text/html",
		"/assets/index-abc.js":  "javascript",
		"/assets/index-abc.css": "text/css",
	} {
		if got := get(t, h, http.MethodGet, target).Header.Get("Content-Type"); !strings.Contains(got, want) {
			t.Errorf("GET %s: Content-Type %q, want %q", target, got, want)
		}
	}
}

func TestSPARefusesWrites(t *testing.T) {
	h := spa(testDist())
	res := get(t, h, http.MethodPost, "/nodes")
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: status %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
	if res := get(t, h, http.MethodHead, "/nodes"); res.StatusCode != 200 || body(t, res) != "" {
		t.Fatalf("HEAD: status %d", res.StatusCode)
	}
}

func TestNotBuiltSaysHowToBuild(t *testing.T) {
	page, err := static.ReadFile("static/notbuilt.html")
	if err != nil {
		t.Fatal(err)
	}
	h := notBuilt(page)
	for _, target := range []string{"/", "/nodes/n1", "/assets/index.js"} {
		res := get(t, h, http.MethodGet, target)
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s: status %d, want 503", target, res.StatusCode)
		}
		if res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: the page must not be cached", target)
		}
		if b := body(t, res); !strings.Contains(b, "make run") {
			t.Errorf("GET %s: the page does not say how to build: %q", target, b)
		}
	}
}

func TestHandlerMatchesTheBuild(t *testing.T) {
	res := get(t, Handler(), http.MethodGet, "/")
	b := body(t, res)
	if Built() {
		if res.StatusCode != 200 || !strings.Contains(b, `id="root"`) {
			t.Fatalf("built: status %d, body %q", res.StatusCode, b)
		}
		return
	}
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "make run") {
		t.Fatalf("not built: status %d, body %q", res.StatusCode, b)
	}
}
