package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/testutil"
)

// serverProcess is the real server binary running as a child process.
type serverProcess struct {
	cmd  *exec.Cmd
	url  string
	logs *testutil.LogBuffer
}

func buildServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "server")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startProcess(t *testing.T, bin, dataDir string) *serverProcess {
	t.Helper()
	graphs := filepath.Join(t.TempDir(), "langgraph.json")
	if err := os.WriteFile(graphs, []byte(`{"graphs":{"echo":"builtin:echo"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startProcessWith(t, bin, nil, "--data-dir", dataDir, "--config", graphs)
}

// startProcessWith starts the binary on a free port with args and env
// added to the test's environment, and waits until it serves. When the
// tests run on PostgreSQL, the server's data directory (--data-dir in args)
// selects its schema, as in testutil, unless args name the database
// (--database-url), as replicas sharing one schema do.
func startProcessWith(t testing.TB, bin string, env []string, args ...string) *serverProcess {
	t.Helper()
	addr := freeAddr(t)
	p := &serverProcess{url: "http://" + addr, logs: &testutil.LogBuffer{}}
	p.cmd = exec.Command(bin, append([]string{"--addr", addr}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	if flagValue(args, "--database-url") == "" {
		if url := testutil.DatabaseURL(t, flagValue(args, "--data-dir")); url != "" {
			p.cmd.Env = append(p.cmd.Env, config.EnvDatabaseURL+"="+url)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(p.url + "/ok")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not become ready: %v\n%s", err, p.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling a child process with a deadline
	}
}

// flagValue is the argument after name in args, or "".
func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// TestKill9KeepsAcknowledgedWrites creates threads from several clients,
// kills the server with SIGKILL mid-stream, restarts it on the same data
// directory and checks that every thread whose creation was acknowledged is
// there, intact.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	dataDir := t.TempDir()
	p := startProcess(t, bin, dataDir)

	var mu sync.Mutex
	acked := map[string]float64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				seq := float64(w*1_000_000 + i)
				body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"seq": seq}})
				resp, err := client.Post(p.url+"/threads", "application/json", bytes.NewReader(body))
				if err != nil {
					return // the server is gone
				}
				var th map[string]any
				err = json.NewDecoder(resp.Body).Decode(&th)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					return
				}
				mu.Lock()
				acked[th["thread_id"].(string)] = seq
				mu.Unlock()
			}
		}(w)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 400 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	close(stop)
	wg.Wait()
	if len(acked) < 50 {
		t.Fatalf("only %d creations acknowledged before the kill", len(acked))
	}

	p2 := startProcess(t, bin, dataDir)
	for id, seq := range acked {
		resp, err := client.Get(p2.url + "/threads/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var th map[string]any
		json.NewDecoder(resp.Body).Decode(&th)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("acknowledged thread %s lost after kill -9: status %d", id, resp.StatusCode)
		}
		if got := th["metadata"].(map[string]any)["seq"]; got != seq {
			t.Fatalf("thread %s metadata corrupted: seq %v, want %v", id, got, seq)
		}
	}
	resp, err := client.Post(p2.url+"/threads/count", "application/json", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	var count float64
	json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if int(count) < len(acked) {
		t.Fatalf("count %v < %d acknowledged", count, len(acked))
	}
	t.Logf("%d acknowledged creations, %v threads after restart", len(acked), fmt.Sprint(count))
}
