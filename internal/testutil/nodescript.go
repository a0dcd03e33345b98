package testutil

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// StartNodeScript runs `node <script>` in dir (the Node suite's directory,
// see SDKDir) until the test ends, and returns the URL the script prints on
// a line "listening <url>" once it is ready. Every line of its stdout is
// also given to onLine (nil ignores them), from another goroutine, so
// scripts can report what they saw.
func StartNodeScript(t testing.TB, dir, script string, onLine func(string)) string {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(dir, script))
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "listening "); ok {
				ready <- u
			}
			if onLine != nil {
				onLine(line)
			}
		}
	}()
	select {
	case u := <-ready:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s did not print its URL within 30s", script)
	}
	return ""
}
