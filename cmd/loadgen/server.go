package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/server"
	"agentserver/internal/storage"
)

// buildServer runs `go build -o <dir>/server ./cmd/server` in the working
// directory, which must be the repository root.
func buildServer(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/server")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Println("building server: go build -o", bin, "./cmd/server")
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/server (run loadgen from the repository root or pass -server): %w\n%s", err, out.String())
	}
	return bin, nil
}

// target is a running server under test. With -replicas N it is the first
// of N processes on one database; peers are the others.
type target struct {
	name    string
	baseURL string
	dataDir string
	// peers are the further replicas of a group (nil with one server);
	// schema is the group's PostgreSQL schema (nil on bbolt).
	peers  []*target
	schema *pgSchema
	// pid is the process whose /proc/<pid>/status holds the server's memory:
	// the child, or loadgen itself with -inprocess.
	pid int

	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{}
	waitErr error

	inproc *server.Server
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startTarget starts the servers named name: one process, or -replicas
// processes that share one fresh schema of -database-url (each with its own
// data directory and port), and waits until each answers GET /ok.
func startTarget(ctx context.Context, o options, tmp, name string, client *http.Client) (*target, error) {
	var schema *pgSchema
	dbURL := ""
	if o.databaseURL != "" {
		s, err := newPGSchema(ctx, o.databaseURL)
		if err != nil {
			return nil, err
		}
		schema, dbURL = s, s.url
		fmt.Printf("[%s] PostgreSQL schema %s (dropped when the servers stop)\n", name, s.name)
	}
	var first *target
	for k := range max(o.replicas, 1) {
		rn := name
		if k > 0 {
			rn = fmt.Sprintf("%s-r%d", name, k+1)
		}
		t, err := startProcess(ctx, o, tmp, rn, dbURL, client)
		if err != nil {
			switch {
			case first != nil:
				err = errors.Join(err, first.stop())
			case schema != nil:
				err = errors.Join(err, schema.drop())
			}
			return nil, err
		}
		if first == nil {
			first = t
			first.schema = schema
		} else {
			first.peers = append(first.peers, t)
		}
	}
	return first, nil
}

// replicas returns every process of the group, the first one first.
func (t *target) replicas() []*target {
	return append([]*target{t}, t.peers...)
}

// base returns the base URL of the replica that request i goes to: the
// requests of a loop are spread round-robin over the group.
func (t *target) base(i int) string {
	k := i % (1 + len(t.peers))
	if k == 0 {
		return t.baseURL
	}
	return t.peers[k-1].baseURL
}

// cpuTicks returns the CPU ticks of every process of the group, summed.
func (t *target) cpuTicks() (int64, error) {
	var sum int64
	for _, p := range t.replicas() {
		n, err := procCPUTicks(p.pid)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// startProcess starts one server named name with a fresh data directory
// under tmp (and dbURL as its database, unless empty) and waits until GET
// /ok answers 200.
func startProcess(ctx context.Context, o options, tmp, name, dbURL string, client *http.Client) (*target, error) {
	dataDir := filepath.Join(tmp, "data-"+name)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	t := &target{name: name, dataDir: dataDir}
	if o.inProcess {
		cfg := config.Default()
		cfg.Addr = "127.0.0.1:0"
		cfg.DataDir = dataDir
		cfg.DatabaseURL = dbURL
		cfg.GraphsFile = o.configFile
		srv, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), server.Options{})
		if err != nil {
			return nil, fmt.Errorf("start in-process server: %w", err)
		}
		if err := srv.Start(); err != nil {
			return nil, errors.Join(err, srv.Shutdown(context.Background()))
		}
		t.inproc, t.baseURL, t.pid = srv, srv.URL(), os.Getpid()
	} else {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		logPath := filepath.Join(tmp, "server-"+name+".log")
		lf, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		args := []string{"--addr", addr, "--data-dir", dataDir, "--config", o.configFile}
		shown := slices.Clone(args)
		if dbURL != "" {
			// The URL may hold a password: the environment keeps it out of
			// the process list and of what loadgen prints.
			shown = append(shown, "(AGENTSERVER_DATABASE_URL: the group's schema)")
		}
		args = append(args, o.serverArgs...)
		shown = append(shown, o.serverArgs...)
		cmd := exec.Command(o.serverBin, args...)
		cmd.Env = append(os.Environ(), o.serverEnv...)
		if dbURL != "" {
			cmd.Env = append(cmd.Env, config.EnvDatabaseURL+"="+dbURL)
		}
		cmd.Stdout, cmd.Stderr = lf, lf
		if err := cmd.Start(); err != nil {
			lf.Close()
			return nil, fmt.Errorf("start %s: %w", o.serverBin, err)
		}
		t.cmd, t.logFile, t.baseURL, t.pid = cmd, lf, "http://"+addr, cmd.Process.Pid
		t.exited = make(chan struct{})
		go func() {
			t.waitErr = cmd.Wait()
			close(t.exited)
		}()
		fmt.Printf("[%s] started %s %s (pid %d)\n", name, o.serverBin, strings.Join(shown, " "), t.pid)
	}
	if err := t.waitReady(ctx, client, o.readyTO); err != nil {
		if t.inproc == nil {
			select {
			case <-t.exited: // nothing left to stop
				t.logFile.Close()
				return nil, err
			default:
			}
		}
		return nil, errors.Join(err, t.stopOne())
	}
	return t, nil
}

// waitReady polls GET /ok until it answers 200, the process exits, or the
// deadline passes.
func (t *target) waitReady(ctx context.Context, client *http.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.baseURL+"/ok", nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server %s not ready within %s: %w%s", t.name, timeout, ctx.Err(), t.logTail())
		case <-t.exitedCh():
			return fmt.Errorf("server %s exited before it was ready: %v%s", t.name, t.waitErr, t.logTail())
		case <-tick.C:
		}
	}
}

func (t *target) exitedCh() <-chan struct{} {
	if t.exited == nil {
		return nil // in-process: never exits on its own
	}
	return t.exited
}

// logTail returns the end of the child's log, for error messages.
func (t *target) logTail() string {
	if t.logFile == nil {
		return ""
	}
	b, err := os.ReadFile(t.logFile.Name())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nserver log tail:\n" + string(b)
}

// stop stops every process of the group, the further replicas first, and
// then drops the group's schema.
func (t *target) stop() error {
	var errs []error
	for _, p := range slices.Backward(t.replicas()) {
		errs = append(errs, p.stopOne())
	}
	if t.schema != nil {
		errs = append(errs, t.schema.drop())
	}
	return errors.Join(errs...)
}

// stopOne sends SIGTERM and waits for the server to exit (SIGKILL after 30 s).
func (t *target) stopOne() error {
	if t.inproc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return t.inproc.Shutdown(ctx)
	}
	defer t.logFile.Close()
	select {
	case <-t.exited:
		return fmt.Errorf("server %s had already exited: %v%s", t.name, t.waitErr, t.logTail())
	default:
	}
	if err := t.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal server %s: %w", t.name, err)
	}
	select {
	case <-t.exited:
	case <-time.After(30 * time.Second):
		t.cmd.Process.Kill()
		<-t.exited
		return fmt.Errorf("server %s did not stop within 30s of SIGTERM; killed", t.name)
	}
	if t.waitErr != nil {
		return fmt.Errorf("server %s exit: %v%s", t.name, t.waitErr, t.logTail())
	}
	return nil
}

// procMem holds the memory figures of /proc/<pid>/status, in KiB. RssFile
// includes the pages of bbolt's memory map that the process has touched;
// RssAnon is the Go heap, stacks and runtime.
type procMem struct {
	rssKiB, hwmKiB, anonKiB, fileKiB int64
}

func readProcMem(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	var m procMem
	fields := map[string]*int64{"VmRSS": &m.rssKiB, "VmHWM": &m.hwmKiB, "RssAnon": &m.anonKiB, "RssFile": &m.fileKiB}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if p := fields[k]; ok && p != nil {
			fmt.Sscanf(strings.TrimSpace(v), "%d", p)
		}
	}
	if m.rssKiB == 0 {
		return m, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// dbFileSize returns the size of the server's database file, or -1.
func (t *target) dbFileSize() int64 {
	fi, err := os.Stat(filepath.Join(t.dataDir, storage.FileName))
	if err != nil {
		return -1
	}
	return fi.Size()
}

// dbFileNote describes the server's database file for the log: its size,
// or that the data is in PostgreSQL.
func (t *target) dbFileNote() string {
	if n := t.dbFileSize(); n >= 0 {
		return fmt.Sprintf("db file %.1f MiB", float64(n)/(1<<20))
	}
	return "no db file (PostgreSQL)"
}

// procCPUTicks returns the user plus system CPU time of a process from
// /proc/<pid>/stat (utime and stime, fields 14 and 15), in clock ticks
// (USER_HZ, 100 per second on Linux).
func procCPUTicks(pid int) (int64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// f[0] is field 3 (state), so utime is f[11] and stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat utime %q: %w", pid, f[11], err)
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat stime %q: %w", pid, f[12], err)
	}
	return utime + stime, nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name
// (field 2, in parentheses, which may hold spaces): f[0] is field 3.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return f, nil
}
