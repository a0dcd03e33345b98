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
