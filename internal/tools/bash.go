package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"agentserver/internal/llm"
)

// Defaults of BashOptions.
const (
	DefaultBashTimeout   = 120 * time.Second
	DefaultBashMaxOutput = 30_000
)

// drainGrace is how long output is still read after the process group has
// been killed; it only matters when a process left the group (setsid) and
// keeps the output pipe open.
const drainGrace = 2 * time.Second

// BashOptions configures the bash tool.
type BashOptions struct {
	// Timeout bounds one command (DefaultBashTimeout when zero).
	Timeout time.Duration
	// MaxOutput bounds the returned output in bytes (DefaultBashMaxOutput
	// when zero); the middle of longer output is cut out.
	MaxOutput int
	// Env is added to the command's minimal environment (PATH, HOME and PWD
	// set to the workspace, LANG); entries are "KEY=value".
	Env []string
}

func (o BashOptions) withDefaults() BashOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultBashTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultBashMaxOutput
	}
	return o
}

type bashTool struct{ opts BashOptions }

// NewBash returns the bash tool: `bash -c <command>` in the workspace, in
// its own process group, which is killed when the command exits, times out
// or ctx is cancelled. A non-zero exit is a normal result; cancelling ctx
// returns ctx's error.
func NewBash(opts BashOptions) Tool { return &bashTool{opts: opts.withDefaults()} }

// UsesWorkspace reports that commands run in the thread's workspace.
func (t *bashTool) UsesWorkspace() bool { return true }

func (t *bashTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameBash,
		Description: fmt.Sprintf("Run a shell command with `bash -c` in the workspace directory and get its "+
			"combined stdout and stderr plus the exit code. Commands are killed after %s, together with "+
			"anything they started; background processes do not survive the call. Long output is cut "+
			"in the middle. Prefer read_file, grep and glob for reading and searching files.",
			t.opts.Timeout),
		Parameters: schema(map[string]any{
			"command": prop("string", "The command line to run, e.g. \"go test ./...\"."),
		}, "command"),
	}
}

func (t *bashTool) Call(ctx context.Context, call Call) (Result, error) {
	command, err := args(call.Args).str("command", true)
	if err != nil {
		return Result{}, err
	}
	if strings.IndexByte(command, 0) >= 0 {
		return Result{}, argError("command", "contains a NUL byte")
	}
	ws, err := OpenWorkspace(call.Workspace)
	if err != nil {
		return Result{}, err
	}
	dir := ws.Dir()
	ws.Close()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	run, err := t.run(ctx, dir, command)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: run}, nil
}

func (t *bashTool) env(dir string) []string {
	p := os.Getenv("PATH")
	if p == "" {
		p = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	env := []string{"PATH=" + p, "HOME=" + dir, "PWD=" + dir, "LANG=C.UTF-8", "TERM=dumb"}
	return append(env, t.opts.Env...)
}

func (t *bashTool) run(ctx context.Context, dir, command string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("bash: %w", err)
	}
	defer r.Close()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = t.env(dir)
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return "", fmt.Errorf("bash: start: %w", err)
	}
	w.Close() // the children hold the only write ends now
	pgid := cmd.Process.Pid

	out := &headTail{max: t.opts.MaxOutput}
	var readers sync.WaitGroup
	readers.Go(func() { out.readFrom(r) })

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(t.opts.Timeout)
	defer timer.Stop()
	var waitErr error
	timedOut := false
	select {
	case waitErr = <-waited:
	case <-timer.C:
		timedOut = true
		killGroup(pgid)
		waitErr = <-waited
	case <-ctx.Done():
		killGroup(pgid)
		waitErr = <-waited
	}
	// Whatever the command left running in its group dies with it.
	killGroup(pgid)
	_ = r.SetReadDeadline(time.Now().Add(drainGrace))
	readers.Wait()

	if !timedOut && ctx.Err() != nil {
		return "", fmt.Errorf("bash: %w", context.Cause(ctx))
	}
	text := out.String()
	if text == "" {
		text = "(no output)"
	}
	var status string
	switch {
	case timedOut:
		status = fmt.Sprintf("[Command timed out after %s and was killed]", t.opts.Timeout)
	case waitErr == nil:
		status = "[Command succeeded with exit code 0]"
	default:
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return "", fmt.Errorf("bash: %w", waitErr)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = fmt.Sprintf("[Command was killed by signal %s]", ws.Signal())
		} else {
			status = fmt.Sprintf("[Command failed with exit code %d]", ee.ExitCode())
		}
	}
	return text + "\n" + status, nil
}

// killGroup kills every process in the group; an already empty group is
// fine. The group id is bash's pid; after bash has been reaped it stays
// reserved while any member lives, so the only (theoretical) misfire is a
// pid reused as a new group id in the microseconds between Wait and this
// call, after every member is gone.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// headTail keeps the first and last max/2 bytes of what is written to it
// and counts the rest.
type headTail struct {
	max     int
	head    []byte
	tail    []byte // ring of the last max/2 bytes, in order after trim
	dropped int64
}

func (h *headTail) readFrom(r *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		h.write(buf[:n])
		if err != nil {
			return
		}
	}
}

func (h *headTail) write(p []byte) {
	half := h.max / 2
	if room := half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	h.tail = append(h.tail, p...)
	if extra := len(h.tail) - (h.max - half); extra > 0 {
		h.dropped += int64(extra)
		h.tail = append(h.tail[:0], h.tail[extra:]...)
	}
}

// String returns the kept output, with a note where bytes were cut.
func (h *headTail) String() string {
	if h.dropped == 0 {
		return strings.ToValidUTF8(string(h.head)+string(h.tail), "\uFFFD")
	}
	head := h.head
	for len(head) > 0 && !utf8.Valid(head) && len(h.head)-len(head) < utf8.UTFMax {
		head = head[:len(head)-1]
	}
	tail := h.tail
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) && len(h.tail)-len(tail) < utf8.UTFMax {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n\n... [output truncated: %d bytes omitted] ...\n\n%s",
		strings.ToValidUTF8(string(head), "\uFFFD"), h.dropped, strings.ToValidUTF8(string(tail), "\uFFFD"))
}
