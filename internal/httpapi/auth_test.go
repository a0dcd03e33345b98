package httpapi_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

func TestRouteTableListsEveryRoute(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	missing, err := s.UnlistedRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("routes without an entry in httpapi's route table (add them to operations or otherRoutes):\n%s", strings.Join(missing, "\n"))
	}
}

func TestAuthIdentity(t *testing.T) {
	s, j := testutil.StartAuth(t, map[string]any{"owner_scoped": true})
	good := j.Token(t, "alice", nil, nil)
	now := time.Now().Unix()
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"iss": j.Issuer, "aud": j.Audience, "sub": "alice", "exp": now + 3600}
		for k, v := range over {
			c[k] = v
		}
		return c
	}
	rs := map[string]any{"alg": "RS256", "kid": "test-key-1"}
	forged := good[:strings.LastIndex(good, ".")+1] + strings.Repeat("A", 342)
	bad := map[string]string{
		"expired":        j.Sign(t, rs, claims(map[string]any{"exp": now - 3600})),
		"not yet valid":  j.Sign(t, rs, claims(map[string]any{"nbf": now + 3600})),
		"wrong issuer":   j.Sign(t, rs, claims(map[string]any{"iss": "https://elsewhere.test"})),
		"wrong audience": j.Sign(t, rs, claims(map[string]any{"aud": "someone-else"})),
		"alg none":       strings.Split(j.Sign(t, map[string]any{"alg": "none"}, claims(nil)), ".")[0] + "." + strings.Split(good, ".")[1] + ".",
		"forged":         forged,
		"unknown kid":    j.Sign(t, map[string]any{"alg": "RS256", "kid": "rotated-away"}, claims(nil)),
		"oversized":      j.Sign(t, rs, claims(map[string]any{"pad": strings.Repeat("x", 20000)})),
		"garbage":        "not-a-token",
	}
	for name, tok := range bad {
		r := s.As(testutil.Bearer(tok)).Do("GET", "/info", nil)
		body := r.Object(t)
		if r.Status != http.StatusUnauthorized || body["code"] != "unauthorized" {
			t.Errorf("%s: status %d body %s, want 401 unauthorized", name, r.Status, r.Raw)
		}
		if len(tok) > 20 && strings.Contains(string(r.Raw), tok[len(tok)-20:]) {
			t.Errorf("%s: the error echoes the token: %s", name, r.Raw)
		}
	}
	if r := s.As(http.Header{}).Do("GET", "/info", nil); r.Status != 401 || r.Object(t)["code"] != "unauthorized" {
		t.Errorf("no credentials: %d %s", r.Status, r.Raw)
	}
	if r := s.As(http.Header{"X-Api-Key": {"wrong"}}).Do("GET", "/info", nil); r.Status != 401 {
		t.Errorf("wrong api key: %d %s", r.Status, r.Raw)
	}
	user := s.As(testutil.Bearer(good))
	user.Must(200, "GET", "/info", nil)
	s.As(http.Header{}).Must(200, "GET", "/ok", nil)
	s.As(http.Header{}).Must(200, "GET", "/openapi.json", nil)
	// /metrics aggregates every user's runs: the operator's only.
	if r := user.Do("GET", "/metrics", nil); r.Status != http.StatusForbidden || r.Object(t)["code"] != "forbidden" {
		t.Errorf("GET /metrics as a user: %d %s, want 403", r.Status, r.Raw)
	}
	req, _ := http.NewRequest("GET", s.URL()+"/metrics", nil)
	req.Header.Set("x-api-key", "opkey")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /metrics as the operator: %d", resp.StatusCode)
	}
}

// TestAuthPathModuleMissing checks that an auth.path whose module cannot
// be loaded stops the start with a line naming the key, the file and the
// cause, rather than serving without the handlers it names.
func TestAuthPathModuleMissing(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: auth.path modules run in Node graph workers")
	}
	graphs := testutil.WithSection(t, testutil.TestGraphs, "auth", map[string]any{"path": "./auth.mjs:auth"})
	err := testutil.BuildErr(t, testutil.Options{Graphs: graphs})
	if err == nil || !strings.Contains(err.Error(), "auth.path (") || !strings.Contains(err.Error(), "cannot import") || !strings.Contains(err.Error(), "auth.mjs") {
		t.Fatalf("start with a missing auth.path module: %v", err)
	}
}
