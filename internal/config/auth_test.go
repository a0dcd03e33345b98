package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadAuth(t *testing.T) {
	p := writeFile(t, `{"auth": {"jwt": {"key_file": "keys.json", "audience": "api", "leeway_seconds": 5},
		"owner_scoped": true, "permissions": {"threads:create": ["threads:write"], "store": ["memory"]},
		"disable_studio_auth": true, "cache": {"ttl_seconds": 60, "max_size": 10}}}`)
	a, err := LoadAuth(p)
	if err != nil {
		t.Fatal(err)
	}
	if a.JWT == nil || a.JWT.KeyFile != filepath.Join(filepath.Dir(p), "keys.json") || a.JWT.Audience[0] != "api" || a.JWT.Leeway != 5*time.Second {
		t.Fatalf("jwt = %+v", a.JWT)
	}
	if !a.OwnerScoped || !a.DisableStudioAuth || a.Cache.MaxSize != 10 || a.Permissions["store"][0] != "memory" {
		t.Fatalf("auth = %+v", a)
	}
	none, err := LoadAuth(writeFile(t, `{"graphs": {}}`))
	if err != nil || none.Enabled() {
		t.Fatalf("no auth section: %+v %v", none, err)
	}
}

func TestLoadAuthRefusesBadSections(t *testing.T) {
	for body, want := range map[string]string{
		`{"auth": {"jwt": {}}}`: "set one of issuer, jwks_url or key_file",
		`{"auth": {"jwt": {"key_file": "k", "issuer": "https://i"}}}`:              "cannot be combined",
		`{"auth": {"owner_scoped": true}}`:                                         "owner_scoped needs auth.jwt",
		`{"auth": {"jwt": {"key_file": "k"}, "permissions": {"runs": []}}}`:        `unknown resource "runs"`,
		`{"auth": {"jwt": {"key_file": "k"}, "permissions": {"threads:fly": []}}}`: `unknown action "fly"`,
		`{"auth": {"jwt": {"key_file": "k", "audience": 3}}}`:                      "audience",
		`{"auth": {"jwt": {"key_file": "k", "leeway_seconds": -1}}}`:               "leeway_seconds",
	} {
		if _, err := LoadAuth(writeFile(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
}

func TestLoadAuthPathAndHTTP(t *testing.T) {
	p := writeFile(t, `{"auth": {"path": "./src/auth.ts:auth"}, "http": {"app": "./src/app.mjs", "enable_custom_route_auth": false, "public_routes": ["/public/*", "POST /hooks/:id"]}}`)
	a, err := LoadAuth(p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Module == nil || a.Module.Path != filepath.Join(filepath.Dir(p), "src", "auth.ts") || a.Module.Export != "auth" || !a.Enabled() {
		t.Fatalf("auth module = %+v", a.Module)
	}
	h, err := LoadHTTP(p)
	if err != nil {
		t.Fatal(err)
	}
	if h.App == nil || h.App.Path != filepath.Join(filepath.Dir(p), "src", "app.mjs") || h.App.Export != "default" || h.CustomRouteAuth || len(h.PublicRoutes) != 2 {
		t.Fatalf("http = %+v %+v", h, h.App)
	}
	none, err := LoadHTTP(writeFile(t, `{"graphs": {}}`))
	if err != nil || none.App != nil || !none.CustomRouteAuth {
		t.Fatalf("no http section: %+v %v", none, err)
	}
	for body, want := range map[string]string{
		`{"auth": {"path": "./auth.py:auth"}}`:                               "Python modules are not served",
		`{"http": {"app": "./webapp.py:app"}}`:                               "http.app",
		`{"http": {"app": "./app.ts:app", "public_routes": ["hello"]}}`:      `want "/path"`,
		`{"http": {"app": "./app.ts:app", "public_routes": ["get /hello"]}}`: "capitals",
		`{"http": {"public_routes": ["/hello"]}}`:                            "needs http.app",
	} {
		_, errA := LoadAuth(writeFile(t, body))
		_, errH := LoadHTTP(writeFile(t, body))
		err := errA
		if err == nil {
			err = errH
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
}
