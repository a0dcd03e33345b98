package config

import (
	"testing"
)

// TestLimitFlags checks the input-limit flags, their environment fallback
// and their validation.
func TestLimitFlags(t *testing.T) {
	env := map[string]string{EnvMaxBody: "2048", EnvQuota: "12345"}
	getenv := func(k string) string { return env[k] }
	c, err := Parse(nil, getenv)
	if err != nil || c.MaxBodyBytes != 2048 || c.WorkspaceQuota != 12345 {
		t.Fatalf("env: %d %d, %v", c.MaxBodyBytes, c.WorkspaceQuota, err)
	}
	c, err = Parse([]string{"--max-body-size", "4096", "--workspace-quota", "99"}, getenv)
	if err != nil || c.MaxBodyBytes != 4096 || c.WorkspaceQuota != 99 {
		t.Fatalf("flags: %d %d, %v", c.MaxBodyBytes, c.WorkspaceQuota, err)
	}
	for _, args := range [][]string{{"--max-body-size", "0"}, {"--workspace-quota", "-1"}} {
		if _, err := Parse(args, func(string) string { return "" }); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if _, err := Parse(nil, func(k string) string { return map[string]string{EnvMaxBody: "ten"}[k] }); err == nil {
		t.Error("a non-numeric env value was accepted")
	}
	if d := Default(); d.MaxBodyBytes != DefaultMaxBodyBytes || d.WorkspaceQuota != DefaultWorkspaceQuota {
		t.Errorf("defaults = %d %d", d.MaxBodyBytes, d.WorkspaceQuota)
	}
}
