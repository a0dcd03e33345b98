package console_test

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"agentserver/internal/testutil"
)

// get fetches path from the server with the given headers and returns the
// status, the headers and the body.
func get(t *testing.T, s *testutil.Server, method, path string, header http.Header) (int, http.Header, string) {
	t.Helper()
	resp, body := s.Fetch(method, path, header)
	return resp.StatusCode, resp.Header, body
}

func TestConsoleServesIndexAndAssetsWithTheirTypes(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	cases := []struct{ path, contentType, contains string }{
		{"/ui", "text/html; charset=utf-8", `<script type="module" src="js/main.js">`},
		{"/ui/", "text/html; charset=utf-8", "<title>agentserver console</title>"},
		{"/ui/index.html", "text/html; charset=utf-8", "<title>agentserver console</title>"},
		{"/ui/console.css", "text/css; charset=utf-8", "prefers-color-scheme"},
		{"/ui/js/main.js", "text/javascript; charset=utf-8", "import"},
		{"/ui/js/api.js", "text/javascript; charset=utf-8", "x-api-key"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, c := range cases {
		status, h, body := get(t, s, http.MethodGet, c.path, nil)
		if status != http.StatusOK || h.Get("Content-Type") != c.contentType || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s: %d %q, body contains %q: %v", c.path, status, h.Get("Content-Type"), c.contains, strings.Contains(body, c.contains))
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}
}

// /ui redirects to /ui/ (301, keeping the query), and the server's root to
// the console (302), without a key.
func TestConsoleRedirects(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{APIKey: "k"})
	noFollow := *s.Client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, c := range []struct {
		path, location string
		status         int
	}{{"/ui?x=1", "/ui/?x=1", http.StatusMovedPermanently}, {"/", "/ui/", http.StatusFound}} {
		resp, err := noFollow.Get(s.URL() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Location") != c.location {
			t.Fatalf("GET %s: %d, Location %q", c.path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

func TestConsoleFallsBackToIndexForAppPathsOnly(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	_, _, index := get(t, s, http.MethodGet, "/ui/", nil)
	status, h, body := get(t, s, http.MethodGet, "/ui/threads/0199/runs", nil)
	if status != http.StatusOK || body != index || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("app path: %d %q, index served: %v", status, h.Get("Content-Type"), body == index)
	}
	for _, p := range []string{"/ui/js/missing.js", "/ui/nothing.css"} {
		if status, _, _ := get(t, s, http.MethodGet, p, nil); status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, status)
		}
	}
	// A path that climbs out of /ui stays inside the assets.
	if status, _, body := get(t, s, http.MethodGet, "/ui/../../go.mod", nil); status == http.StatusOK && strings.Contains(body, "module agentserver") {
		t.Fatal("a path with .. reached a file outside the assets")
	}
	if status, h, _ := get(t, s, http.MethodPost, "/ui/echo", nil); status != http.StatusMethodNotAllowed || !strings.Contains(h.Get("Allow"), "GET") {
		t.Fatalf("POST /ui/echo: %d, Allow %q; want 405 (only reading is served)", status, h.Get("Allow"))
	}
	if status, h, _ := get(t, s, http.MethodHead, "/ui/console.css", nil); status != http.StatusOK || h.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Fatalf("HEAD: %d %q", status, h.Get("Content-Type"))
	}
}

func TestConsoleAssetsArePublicButTheAPIStillNeedsTheKey(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{APIKey: "s3cret"})
	for _, p := range []string{"/ui", "/ui/", "/ui/js/main.js", "/ui/threads/x"} {
		if status, _, _ := get(t, s, http.MethodGet, p, nil); status != http.StatusOK {
			t.Errorf("GET %s without a key: %d, want 200", p, status)
		}
	}
	if status, _, _ := get(t, s, http.MethodPost, "/threads/search", nil); status != http.StatusUnauthorized {
		t.Fatalf("POST /threads/search without a key: %d, want 401", status)
	}
	if status, _, _ := get(t, s, http.MethodGet, "/info", nil); status != http.StatusUnauthorized {
		t.Fatalf("GET /info without a key: %d, want 401", status)
	}
	// Only reading assets is public: another method under /ui needs the key.
	if status, _, _ := get(t, s, http.MethodPost, "/ui/echo", nil); status != http.StatusUnauthorized {
		t.Fatalf("POST /ui/echo without a key: %d, want 401", status)
	}
	if status, _, _ := get(t, s, http.MethodGet, "/info", http.Header{"X-Api-Key": {"s3cret"}}); status != http.StatusOK {
		t.Fatalf("GET /info with the key: %d", status)
	}
}

// externalRef finds a reference to another origin in src, href, url() or an
// import: a scheme (http:, https:) or a protocol-relative //host.
var externalRef = regexp.MustCompile(`(?i)(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)|url\(\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)|(?:import|from)\s*\(?\s*["'](?:[a-z][a-z0-9+.-]*:|//)|@import`)

func TestConsoleAssetsNameNoOtherOrigin(t *testing.T) {
	var checked int
	err := filepath.WalkDir("assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, m := range externalRef.FindAllString(string(body), -1) {
			// data: URIs are inline content, not another origin.
			if !strings.Contains(strings.ToLower(m), "data:") {
				t.Errorf("%s refers to another origin: %q", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("checked %d files; the assets are missing", checked)
	}
	// The check itself must catch what it is for.
	for _, bad := range []string{`<script src="https://cdn.example/x.js">`, `href='//fonts.example/css'`, `background: url(http://x/y.png)`, `import x from "https://esm.example/y"`} {
		if !externalRef.MatchString(bad) {
			t.Errorf("the check misses %q", bad)
		}
	}
}
