package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBashOutputAndExitCode(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	b := NewBash(BashOptions{Env: []string{"GREETING=hello"}})
	mustCall(t, NewWriteFile(), ws, map[string]any{"file_path": "in.txt", "content": "from the workspace"})

	got := mustCall(t, b, ws, map[string]any{"command": "cat in.txt; echo; echo $GREETING; echo oops >&2"})
	want := "from the workspace\nhello\noops\n\n[Command succeeded with exit code 0]"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	canon, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	got = mustCall(t, b, ws, map[string]any{"command": "pwd; echo $HOME"})
	if want := canon + "\n" + canon + "\n\n[Command succeeded with exit code 0]"; got != want {
		t.Errorf("pwd: got %q, want %q", got, want)
	}

	got = mustCall(t, b, ws, map[string]any{"command": "echo partial; exit 3"})
	if got != "partial\n\n[Command failed with exit code 3]" {
		t.Errorf("exit 3: got %q", got)
	}
	got = mustCall(t, b, ws, map[string]any{"command": "true"})
	if got != "(no output)\n[Command succeeded with exit code 0]" {
		t.Errorf("no output: got %q", got)
	}
	got = mustCall(t, b, ws, map[string]any{"command": "kill -TERM $$"})
	if !strings.Contains(got, "[Command was killed by signal terminated]") {
		t.Errorf("signal: got %q", got)
	}
	wantErr(t, b, ws, map[string]any{}, `"command": is required`)
	wantErr(t, b, ws, map[string]any{"command": "echo \x00"}, "NUL")
}

func TestBashDoesNotLeakServerEnv(t *testing.T) {
	t.Setenv("AGENTSERVER_TEST_SECRET", "s3cret") // not parallel: Setenv
	got := mustCall(t, NewBash(BashOptions{}), newWorkspace(t), map[string]any{"command": "env"})
	if strings.Contains(got, "s3cret") {
		t.Errorf("server environment leaked: %q", got)
	}
	if !strings.Contains(got, "PATH=") {
		t.Errorf("no PATH: %q", got)
	}
}

// readPID polls for a pid file the command writes.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 10*time.Second, "pid file "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	b := NewBash(BashOptions{Timeout: 300 * time.Millisecond})
	start := time.Now()
	got := mustCall(t, b, ws, map[string]any{"command": "echo started; sleep 30 & echo $! > bg.pid; sleep 30"})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("timeout took %s", elapsed)
	}
	if want := "started\n\n[Command timed out after 300ms and was killed]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	pid := readPID(t, filepath.Join(ws, "bg.pid"))
	eventually(t, 10*time.Second, "background sleep to die", func() bool { return !processAlive(pid) })
}

func TestBashCancelKillsChildren(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	b := NewBash(BashOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type result struct {
		res Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.Call(ctx, Call{Args: map[string]any{
			"command": "sleep 30 & echo $! > bg.pid; (sleep 30; echo never) & echo $! > sub.pid; wait",
		}, Workspace: ws})
		done <- result{res, err}
	}()
	bg := readPID(t, filepath.Join(ws, "bg.pid"))
	sub := readPID(t, filepath.Join(ws, "sub.pid"))
	if !processAlive(bg) || !processAlive(sub) {
		t.Fatal("children not running before cancel")
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Call did not return after cancel")
	}
	for _, pid := range []int{bg, sub} {
		eventually(t, 10*time.Second, "child "+strconv.Itoa(pid)+" to die", func() bool { return !processAlive(pid) })
	}
}

func TestBashKillsLeftoversAfterExit(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	start := time.Now()
	got := mustCall(t, NewBash(BashOptions{}), ws, map[string]any{"command": "sleep 30 & echo $!"})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("took %s: waited for the background process", elapsed)
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(got, "\n\n[Command succeeded with exit code 0]"))
	if err != nil {
		t.Fatalf("output %q: %v", got, err)
	}
	eventually(t, 10*time.Second, "background sleep to die", func() bool { return !processAlive(pid) })
}

func TestBashTruncatesOutput(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	b := NewBash(BashOptions{MaxOutput: 1000})
	got := mustCall(t, b, ws, map[string]any{"command": "printf 'H%.0s' $(seq 500); printf 'M%.0s' $(seq 4000); printf 'T%.0s' $(seq 500)"})
	want := strings.Repeat("H", 500) + "\n\n... [output truncated: 4000 bytes omitted] ...\n\n" + strings.Repeat("T", 500) +
		"\n[Command succeeded with exit code 0]"
	if got != want {
		t.Errorf("got %q", got)
	}
	if d := NewBash(BashOptions{}).(*bashTool).opts; d.Timeout != DefaultBashTimeout || d.MaxOutput != DefaultBashMaxOutput {
		t.Errorf("defaults = %+v", d)
	}
}

func TestHeadTailKeepsRunesWhole(t *testing.T) {
	t.Parallel()
	h := &headTail{max: 10}
	for range 20 {
		h.write([]byte("é")) // 2 bytes
	}
	got := h.String()
	if !strings.HasPrefix(got, "éé\n\n... [output truncated: 30 bytes omitted] ...\n\néé") {
		t.Errorf("got %q", got)
	}
	h = &headTail{max: 9}
	h.write([]byte(strings.Repeat("é", 20)))
	if got := h.String(); strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("split rune: %q", got)
	}
}
