package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SDKDir returns the Node test suite's directory (tests/sdk of the
// module). It skips the test, saying why, when node is not installed or
// its packages are not (run `npm ci` there first); CI installs them before
// the Go tests run. An installation that lacks one of packages (older than
// package.json) fails the test.
func SDKDir(t testing.TB, packages ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the tests against real MCP and A2A packages need it")
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	sdk := filepath.Join(dir, "tests", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "node_modules")); err != nil {
		t.Skipf("%s/node_modules is absent: run `npm ci --no-audit --no-fund` there to run this test", sdk)
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(sdk, "node_modules", p)); err != nil {
			t.Fatalf("%s/node_modules lacks %s: run `npm ci --no-audit --no-fund` there", sdk, p)
		}
	}
	return sdk
}
