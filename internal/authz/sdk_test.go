package authz_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agentserver/internal/testutil"
)

// TestTenantsThroughSDK drives two users through the real Node SDK
// (tests/sdk/tenants.mjs) across threads, runs, assistants, crons and the
// store, on a server with owner-scoped JWTs from a local key set.
func TestTenantsThroughSDK(t *testing.T) {
	dir := testutil.SDKDir(t, "@langchain/langgraph-sdk")
	s, j := testutil.StartAuth(t, map[string]any{"owner_scoped": true})
	cmd := exec.Command("node", filepath.Join(dir, "tenants.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"LANGGRAPH_API_URL="+s.URL(),
		"ALICE_TOKEN="+j.Token(t, "alice", nil, nil),
		"BOB_TOKEN="+j.Token(t, "bob", nil, nil),
		"OPERATOR_KEY=opkey",
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), "ok ") {
		t.Fatalf("tenants.mjs: %v\n%s", err, out)
	}
	t.Logf("tenants.mjs: %s", strings.TrimSpace(string(out)))
	// The operator still sees what both users made.
	if n := len(s.As(http.Header{"X-Api-Key": {"opkey"}}).Must(200, "POST", "/threads/search", map[string]any{"limit": 100}).List(t)); n < 3 {
		t.Errorf("the operator sees %d threads, want at least 3", n)
	}
}
