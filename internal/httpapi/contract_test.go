package httpapi_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"agentserver/internal/testutil"
)

// get fetches path with the test server's client and returns the response
// and its body, whatever the content type.
func get(t *testing.T, s *testutil.Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := s.Client.Get(s.URL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestOpenAPIJSONServesTheContract(t *testing.T) {
	// With an API key set, the contract is public like /ok.
	s := testutil.StartServer(t, testutil.Options{APIKey: "s3cret"})
	r := s.Must(200, "GET", "/openapi.json", nil)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q", ct)
	}
	doc := r.Object(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range []string{"/ok", "/threads", "/threads/{thread_id}/runs/stream", "/assistants/search", "/store/items"} {
		if paths[p] == nil {
			t.Errorf("path %s missing from /openapi.json", p)
		}
	}
	if paths["/openapi.json"] != nil || paths["/docs"] != nil {
		t.Error("the contract routes are not operations of the contract")
	}
	if _, ok := doc["components"].(map[string]any)["schemas"].(map[string]any)["Thread"]; !ok {
		t.Error("component schema Thread missing")
	}
}

// externalRef matches a reference to anything on the network: a link,
// script, stylesheet, image or CSS import with an absolute URL.
var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|@import`)

func TestDocsPageIsSelfContained(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{APIKey: "s3cret"})
	resp, page := get(t, s, "/docs")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /docs: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`<h2>Threads</h2>`, `<h2>Thread Runs</h2>`, `<h2>Store</h2>`, // grouped by tag
		`<code>/threads/{thread_id}/runs/wait</code>`, `Create a thread`, // operations with summaries
		`<code>if_exists</code>`,          // a body property in the schemas
		`<a href="#schema-ThreadCreate">`, // request body schemas link to their section
		`<code>limit</code>`,              // a parameter
		`href="openapi.json"`,             // the contract
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if m := externalRef.FindString(page); m != "" {
		t.Errorf("page references the network: %q", m)
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("page needs JavaScript")
	}
	// Every link within the page has a target.
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		ids[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !ids[m[1]] {
			t.Errorf("link #%s has no target", m[1])
		}
	}
}
