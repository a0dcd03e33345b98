package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentserver/internal/testutil/pgtest"
)

// The README and every doc under docs/ run as written: TestDocWalkthroughs
// runs each one's sh (and js) blocks in order in one bash session and
// compares each block's output with the block shown after it. A block that
// cannot run in a test (it needs root, a release archive, or minutes of
// benchmarks) says so just above its fence with a notRunMarker comment and
// a reason; it is checked instead (bash -n, and the repository paths it
// names exist).
const notRunMarker = "<!-- not run by the docs test: "

// docBlock is one fenced code block of a markdown file.
type docBlock struct {
	lang string // the first word of the info string
	body string
	line int // of the opening fence
	// afterProse is true when text other than blank lines separates the
	// block from the one before it.
	afterProse bool
	// prose is the text between the block before and this one.
	prose string
	// notRun is the reason its notRunMarker gives, or "".
	notRun string
}

// docStep is one runnable block and the output the doc shows for it.
type docStep struct {
	code docBlock
	want *docBlock
}

// TestDocWalkthroughs runs the shell and JavaScript blocks of README.md
// and docs/*.md, each file in one bash session from the repository root
// with the repository's own demo model, and checks the shape of every
// output they show: ids, timestamps and "…" stand for any value; the fixed
// ports of the docs are replaced by free ones (the default port 2024 by
// way of AGENTSERVER_ADDR). Every block must end with status 0, and a
// walkthrough must stop every process it starts.
func TestDocWalkthroughs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server and the demo model")
	}
	if pgtest.Enabled() {
		t.Skip("the docs' servers keep their data in the embedded database, as a reader's do; the run without PostgreSQL covers them")
	}
	for _, bin := range []string{"bash", "curl", "jq", "make"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("the docs need %s: %v", bin, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		name, _ := filepath.Rel(root, path)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !hasShellBlocks(string(raw)) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			md, ports := freePorts(t, string(raw))
			steps := docSteps(t, root, md)
			env := docEnv(t)
			if addr := ports["2024"]; addr != "" {
				env = append(env, "AGENTSERVER_ADDR="+addr)
			}
			if len(steps) > 0 {
				runDocSteps(t, root, env, steps)
			}
		})
	}
}

// hasShellBlocks reports whether a markdown text has sh or js blocks.
func hasShellBlocks(md string) bool {
	for _, b := range parseBlocks(md) {
		if b.lang == "sh" || b.lang == "js" {
			return true
		}
	}
	return false
}

// parseBlocks returns the fenced code blocks of a markdown text.
func parseBlocks(md string) []docBlock {
	var out []docBlock
	var cur *docBlock
	var body, prose []string
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			lang, _, _ := strings.Cut(strings.TrimPrefix(line, "```"), " ")
			cur, body = &docBlock{lang: lang, line: i + 1, prose: strings.Join(prose, "\n")}, nil
			for _, p := range prose {
				p = strings.TrimSpace(p)
				if reason, ok := strings.CutPrefix(p, notRunMarker); ok {
					cur.notRun = strings.TrimSpace(strings.TrimSuffix(reason, "-->"))
				} else if p != "" {
					cur.afterProse = true
				}
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.body = strings.Join(body, "\n")
			out = append(out, *cur)
			cur, prose = nil, nil
		case cur != nil:
			body = append(body, line)
		default:
			prose = append(prose, line)
		}
	}
	return out
}

// isOutput reports whether a block shows output (rather than code or a
// file to write).
func isOutput(b docBlock) bool {
	switch b.lang {
	case "", "json", "text":
		return true
	}
	return false
}

// docSteps pairs each runnable block with the output block right after it.
// JavaScript blocks become `node <file>` steps when the SDK is installed.
// Blocks marked not to run are checked instead.
func docSteps(t *testing.T, root, md string) []docStep {
	blocks := parseBlocks(md)
	nodeModules := filepath.Join(root, "tests", "sdk", "node_modules")
	_, noSDK := os.Stat(filepath.Join(nodeModules, "@langchain", "langgraph-sdk"))
	_, noNode := exec.LookPath("node")
	var steps []docStep
	for i, b := range blocks {
		if b.lang != "sh" && b.lang != "js" {
			continue
		}
		if b.notRun != "" {
			checkNotRun(t, root, b)
			continue
		}
		switch b.lang {
		case "sh":
		case "js":
			file, err := jsFileName(b)
			if err != nil {
				t.Error(err)
				continue
			}
			if noSDK != nil || noNode != nil {
				t.Logf("line %d: JavaScript block not run (needs node and `npm ci` in tests/sdk)", b.line)
				continue
			}
			b.body = "node " + jsFile(t, nodeModules, file, b)
		}
		step := docStep{code: b}
		if i+1 < len(blocks) && isOutput(blocks[i+1]) && !blocks[i+1].afterProse {
			step.want = &blocks[i+1]
		}
		steps = append(steps, step)
	}
	return steps
}

var (
	npmInstall = regexp.MustCompile("`npm install @langchain/langgraph-sdk`")
	nodeRun    = regexp.MustCompile("`node ([\\w.-]+\\.mjs)`")
)

// jsFileName checks that the prose before a JavaScript block tells the
// reader how to run it (the npm install step and `node <file>.mjs`) and
// returns the file name it gives.
func jsFileName(b docBlock) (string, error) {
	m := nodeRun.FindStringSubmatch(b.prose)
	if !npmInstall.MatchString(b.prose) || m == nil {
		return "", fmt.Errorf("line %d: the text before a JavaScript block must say how to run it: `npm install @langchain/langgraph-sdk` and `node <file>.mjs`", b.line)
	}
	return m[1], nil
}

// repoPath matches the repository paths a command names.
var repoPath = regexp.MustCompile(`(?:^|[\s"'(=])\./((?:cmd|internal|scripts|tests|agents|docs)/[\w./-]*)`)

// checkNotRun checks a block that is not run: it gives a reason, bash
// parses it, and the repository paths it names exist.
func checkNotRun(t *testing.T, root string, b docBlock) {
	if b.lang != "sh" {
		t.Errorf("line %d: only sh blocks may be marked not to run", b.line)
		return
	}
	if len(b.notRun) < 10 {
		t.Errorf("line %d: say why the block is not run: %q", b.line, b.notRun)
	}
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(b.body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("line %d: bash -n: %v\n%s", b.line, err, out)
	}
	for _, m := range repoPath.FindAllStringSubmatch(b.body, -1) {
		p := strings.TrimSuffix(strings.TrimSuffix(m[1], "..."), "/")
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("line %d: the block names ./%s, which is not in the repository", b.line, p)
		}
	}
}

// jsFile writes a JavaScript block, under the name the doc gives it, next
// to a link to the SDK suite's node_modules (where the reader ran npm
// install), and returns its path.
func jsFile(t *testing.T, nodeModules, name string, b docBlock) string {
	dir := t.TempDir()
	if err := os.Symlink(nodeModules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var fixedPort = regexp.MustCompile(`(?:127\.0\.0\.1|localhost):(\d{4,5})\b`)

// freePorts replaces every fixed 127.0.0.1 (or localhost) port of the doc
// by a free one on 127.0.0.1, the same one wherever the port appears, and
// returns the replacements by port.
func freePorts(t *testing.T, md string) (string, map[string]string) {
	ports := map[string]string{}
	out := fixedPort.ReplaceAllStringFunc(md, func(s string) string {
		port := fixedPort.FindStringSubmatch(s)[1]
		if ports[port] == "" {
			ports[port] = freeAddr(t)
		}
		return ports[port]
	})
	return out, ports
}

// runDocSteps runs the steps in one bash session (each block's stdout and
// stderr go to files of their own; processes a block starts in the
// background keep writing to its files) and then compares the outputs.
func runDocSteps(t *testing.T, root string, env []string, steps []docStep) {
	out := t.TempDir()
	var script strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&script, "{\n%s\n} >%q 2>%q\necho $? >%q\n", s.code.body, stepFile(out, i, "out"), stepFile(out, i, "err"), stepFile(out, i, "status"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = root
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The group holds the background servers and the demo model too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	combined, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		if left := groupLeft(cmd.Process.Pid, 10*time.Second); left != "" {
			t.Errorf("the walkthrough leaves processes running (a block starts them and no later block stops them):\n%s", left)
		}
		stopGroup(t, cmd.Process.Pid)
	}
	if ctx.Err() != nil {
		t.Fatalf("the walkthrough did not finish: %v\n%s", err, combined)
	}
	if err != nil { // a block's last command failed: its output tells more
		t.Logf("bash: %v\n%s", err, combined)
	}
	for i, s := range steps {
		stdout, stderr := readStepFile(t, out, i, "out"), readStepFile(t, out, i, "err")
		if status := strings.TrimSpace(readStepFile(t, out, i, "status")); status != "0" {
			t.Errorf("block at line %d ended with status %s\n--- stdout:\n%s\n--- stderr:\n%s", s.code.line, status, stdout, stderr)
		}
		if s.want == nil {
			continue
		}
		background := regexp.MustCompile(`(?m)&\s*(#.*)?$`).MatchString(s.code.body)
		var err error
		if background {
			err = linesAppear(s.want.body, stdout+"\n"+stderr)
		} else {
			err = sameShape(s.want.body, stdout)
		}
		if err != nil {
			t.Errorf("block at line %d: %v\n--- stdout:\n%s\n--- stderr:\n%s", s.code.line, err, stdout, stderr)
		}
	}
}

// groupLeft waits up to within for the processes of group pgid to end (a
// server stopped by the last block may still be shutting down) and lists
// those still there, or returns "".
func groupLeft(pgid int, within time.Duration) string {
	deadline := time.Now().Add(within)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			out, _ := exec.Command("ps", "-eo", "pgid=,pid=,args=").Output()
			var left []string
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) > 2 && f[0] == strconv.Itoa(pgid) {
					left = append(left, strings.Join(f[1:], " "))
				}
			}
			if len(left) == 0 {
				return fmt.Sprintf("(processes of group %d)", pgid)
			}
			return strings.Join(left, "\n")
		}
		time.Sleep(20 * time.Millisecond) // polling the kernel for the processes' end
	}
	return ""
}

// stopGroup kills what is left of the session (the demo model, servers a
// failed block did not stop) and waits until it is gone, so that the test's
// temporary directories can be removed.
func stopGroup(t *testing.T, pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Errorf("processes of group %d still run", pgid)
			return
		}
		time.Sleep(10 * time.Millisecond) // polling the kernel for the processes' end
	}
}

func stepFile(dir string, i int, kind string) string {
	return filepath.Join(dir, strconv.Itoa(i)+"."+kind)
}

func readStepFile(t *testing.T, dir string, i int, kind string) string {
	b, err := os.ReadFile(stepFile(dir, i, kind))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docEnv is the environment of a reader who has no model configured, with
// temporary directories under the test's.
func docEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "OPENAI_"), strings.HasPrefix(name, "AGENTSERVER_"),
			name == "LANGGRAPH_API_KEY", name == "LANGSMITH_API_KEY", name == "LANGCHAIN_API_KEY", name == "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	// The data directory of servers started without --data-dir.
	return append(env, "TMPDIR="+t.TempDir(), "AGENTSERVER_DATA_DIR="+t.TempDir())
}

var (
	uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)

// normalise replaces ids and timestamps by placeholders and drops trailing
// spaces and blank lines.
func normalise(s string) string {
	s = uuidRe.ReplaceAllString(s, "<id>")
	s = timeRe.ReplaceAllString(s, "<time>")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// shapePattern turns shown output into a pattern: literal text, where "…"
// (with the space after it, if any, which is there for the reader) stands
// for anything within a line.
func shapePattern(want string) *regexp.Regexp {
	parts := strings.Split(strings.ReplaceAll(normalise(want), "… ", "…"), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// sameShape checks that got has the shape of want, line for line.
func sameShape(want, got string) error {
	if !shapePattern(want).MatchString(normalise(got)) {
		return fmt.Errorf("output does not have the shape shown:\n%s", want)
	}
	return nil
}

// linesAppear checks that each line shown appears, with its shape, among
// the lines of got (the output of background processes interleaves).
func linesAppear(want, got string) error {
	gotLines := strings.Split(normalise(got), "\n")
	for _, w := range strings.Split(normalise(want), "\n") {
		re := shapePattern(w)
		found := false
		for _, g := range gotLines {
			if re.MatchString(g) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("no output line has the shape %q", w)
		}
	}
	return nil
}

// TestDocChecks checks the parts of the docs test that judge the docs
// rather than run them: the not-run marker, the JavaScript run line, and
// the detection of processes a walkthrough leaves running.
func TestDocChecks(t *testing.T) {
	md := notRunMarker + "needs root -->\n```sh\napt-get install x\n```\n\n" +
		"Then `npm install @langchain/langgraph-sdk` and `node demo.mjs`:\n\n```js\nconsole.log(1)\n```\n```\n1\n```\n" +
		"No instructions:\n```js\nconsole.log(2)\n```\n"
	b := parseBlocks(md)
	if len(b) != 4 || b[0].notRun != "needs root" || b[0].afterProse || b[1].notRun != "" || !b[1].afterProse || b[2].afterProse {
		t.Fatalf("blocks: %+v", b)
	}
	if name, err := jsFileName(b[1]); err != nil || name != "demo.mjs" {
		t.Errorf("jsFileName = %q, %v", name, err)
	}
	if _, err := jsFileName(b[3]); err == nil {
		t.Error("a JavaScript block without its run line passed")
	}

	cmd := exec.Command("bash", "-c", "sleep 30 & exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	defer stopGroup(t, cmd.Process.Pid)
	if left := groupLeft(cmd.Process.Pid, 100*time.Millisecond); !strings.Contains(left, "sleep 30") {
		t.Errorf("groupLeft = %q, want the sleep left running", left)
	}
	stopGroup(t, cmd.Process.Pid)
	if left := groupLeft(cmd.Process.Pid, time.Second); left != "" {
		t.Errorf("groupLeft after the kill = %q", left)
	}
}
