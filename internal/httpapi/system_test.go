package httpapi_test

import (
	"net/http"
	"testing"

	"agentserver/internal/testutil"
)

func TestOkAndInfo(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	for _, path := range []string{"/ok", "/ok?check_db=1", "/ok?check_db=true", "/ok?check_db=0"} {
		if ok := s.Must(200, "GET", path, nil).Object(t)["ok"]; ok != true {
			t.Fatalf("%s: ok = %v", path, ok)
		}
	}
	s.Must(422, "GET", "/ok?check_db=perhaps", nil)
	info := s.Must(200, "GET", "/info", nil).Object(t)
	if info["version"] == nil || info["flags"].(map[string]any)["assistants"] != true {
		t.Fatalf("info = %v", info)
	}
	if meta := info["metadata"].(map[string]any); meta["commit"] == nil || meta["commit"] == "" || meta["go_version"] == nil {
		t.Fatalf("info metadata %v: want the build's commit and Go version", meta)
	}
}

func TestAPIKeyAuth(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{APIKey: "s3cret"})
	cases := []struct {
		name   string
		path   string
		key    string
		status int
	}{
		{"ok needs no key", "/ok", "", 200},
		{"missing key", "/threads/search", "", 401},
		{"wrong key", "/threads/search", "nope", 401},
		{"prefix of the key", "/threads/search", "s3cre", 401},
		{"right key", "/threads/search", "s3cret", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{"X-Auth-Scheme": {"langsmith"}}
			if c.key != "" {
				h.Set("x-api-key", c.key)
			}
			method := "POST"
			if c.path == "/ok" {
				method = "GET"
			}
			r := s.DoWith(method, c.path, nil, h)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Raw)
			}
			if c.status == 401 && r.Object(t)["detail"] == nil {
				t.Fatalf("401 body = %s", r.Raw)
			}
		})
	}
	// A refused request changes nothing.
	s.DoWith("POST", "/threads", map[string]any{}, http.Header{"x-api-key": {"bad"}})
	n := s.DoWith("POST", "/threads/count", nil, http.Header{"x-api-key": {"s3cret"}})
	if n.JSON != 0.0 {
		t.Fatalf("unauthorized create wrote a thread: count = %v", n.JSON)
	}
}

func TestCORS(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	r := s.DoWith("OPTIONS", "/threads", nil, http.Header{
		"Origin":                         {"http://localhost:3000"},
		"Access-Control-Request-Method":  {"POST"},
		"Access-Control-Request-Headers": {"content-type,x-api-key"},
	})
	if r.Status != 204 || r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" || r.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Fatalf("preflight: %d %v", r.Status, r.Header)
	}
	g := s.DoWith("POST", "/threads", map[string]any{}, http.Header{"Origin": {"http://localhost:3000"}})
	exposed := g.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"Content-Location", "Location", "X-Pagination-Total", "X-Pagination-Next"} {
		if !contains(exposed, h) {
			t.Errorf("header %s not exposed: %q", h, exposed)
		}
	}
}

func TestUnknownRoutesAreJSON(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	r := s.Must(404, "GET", "/nope", nil)
	if r.Object(t)["code"] != "not_found" {
		t.Fatalf("body = %s", r.Raw)
	}
	m := s.Must(405, "PUT", "/threads", map[string]any{})
	if m.Object(t)["detail"] == nil {
		t.Fatalf("405 body = %s", m.Raw)
	}
}

func contains(list, item string) bool {
	for i := 0; i+len(item) <= len(list); i++ {
		if list[i:i+len(item)] == item {
			return true
		}
	}
	return false
}
