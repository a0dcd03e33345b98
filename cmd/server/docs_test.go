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
)

// The walkthroughs of these docs run as written; TestDocWalkthroughs runs
// their blocks in order and compares each block's output with the block
// shown after it.
var walkthroughDocs = []string{"supervisor.md", "subagents.md"}

// docBlock is one fenced code block of a markdown file.
type docBlock struct {
	lang string // the first word of the info string
	body string
	line int // of the opening fence
	// afterProse is true when text other than blank lines separates the
	// block from the one before it.
	afterProse bool
}

// docStep is one runnable block and the output the doc shows for it.
type docStep struct {
	code docBlock
	want *docBlock
}

// TestDocWalkthroughs runs the shell (and, when the SDK suite's modules
// are installed, JavaScript) blocks of docs/supervisor.md and
// docs/subagents.md in one bash session from the repository root, with the
// repository's own demo model, and checks the shape of every output they
// show: ids, timestamps and "…" stand for any value; the fixed ports of the
// docs are replaced by free ones.
func TestDocWalkthroughs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server and the demo model")
	}
	for _, bin := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("the docs need %s: %v", bin, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range walkthroughDocs {
		t.Run(doc, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(root, "docs", doc))
			if err != nil {
				t.Fatal(err)
			}
			steps := docSteps(t, root, freePorts(t, string(raw)))
			runDocSteps(t, root, steps)
		})
	}
}

// parseBlocks returns the fenced code blocks of a markdown text.
func parseBlocks(md string) []docBlock {
	var out []docBlock
	var cur *docBlock
	var body []string
	prose := false
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			lang, _, _ := strings.Cut(strings.TrimPrefix(line, "```"), " ")
			cur, body = &docBlock{lang: lang, line: i + 1, afterProse: prose}, nil
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.body = strings.Join(body, "\n")
			out = append(out, *cur)
			cur, prose = nil, false
		case cur != nil:
			body = append(body, line)
		case strings.TrimSpace(line) != "":
			prose = true
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
func docSteps(t *testing.T, root, md string) []docStep {
	blocks := parseBlocks(md)
	nodeModules := filepath.Join(root, "tests", "sdk", "node_modules")
	_, noSDK := os.Stat(filepath.Join(nodeModules, "@langchain", "langgraph-sdk"))
	_, noNode := exec.LookPath("node")
	var steps []docStep
	for i, b := range blocks {
		switch b.lang {
		case "sh":
		case "js":
			if noSDK != nil || noNode != nil {
				t.Logf("line %d: JavaScript block not run (needs node and `npm ci` in tests/sdk)", b.line)
				continue
			}
			b.body = "node " + jsFile(t, nodeModules, b)
		default:
			continue
		}
		step := docStep{code: b}
		if i+1 < len(blocks) && isOutput(blocks[i+1]) && !blocks[i+1].afterProse {
			step.want = &blocks[i+1]
		}
		steps = append(steps, step)
	}
	if len(steps) == 0 {
		t.Fatal("no runnable blocks")
	}
	return steps
}

// jsFile writes a JavaScript block as an ES module next to a link to the
// SDK suite's node_modules, and returns its path.
func jsFile(t *testing.T, nodeModules string, b docBlock) string {
	dir := t.TempDir()
	if err := os.Symlink(nodeModules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("block%d.mjs", b.line))
	if err := os.WriteFile(path, []byte(b.body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var fixedPort = regexp.MustCompile(`127\.0\.0\.1:(\d{4,5})\b`)

// freePorts replaces every fixed 127.0.0.1 port of the doc by a free one,
// the same one wherever the port appears.
func freePorts(t *testing.T, md string) string {
	ports := map[string]string{}
	return fixedPort.ReplaceAllStringFunc(md, func(s string) string {
		port := fixedPort.FindStringSubmatch(s)[1]
		if ports[port] == "" {
			ports[port] = freeAddr(t)
		}
		return ports[port]
	})
}

// runDocSteps runs the steps in one bash session (each block's stdout and
// stderr go to files of their own; processes a block starts in the
// background keep writing to its files) and then compares the outputs.
func runDocSteps(t *testing.T, root string, steps []docStep) {
	out := t.TempDir()
	var script strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&script, "{\n%s\n} >%q 2>%q\n", s.code.body, stepFile(out, i, "out"), stepFile(out, i, "err"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = root
	cmd.Env = docEnv(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The group holds the background servers and the demo model too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	combined, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		stopGroup(t, cmd.Process.Pid)
	}
	if ctx.Err() != nil {
		t.Fatalf("the walkthrough did not finish: %v\n%s", err, combined)
	}
	if err != nil { // a block's last command failed: its output tells more
		t.Logf("bash: %v\n%s", err, combined)
	}
	for i, s := range steps {
		if s.want == nil {
			continue
		}
		stdout, stderr := readStepFile(t, out, i, "out"), readStepFile(t, out, i, "err")
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
	return append(env, "TMPDIR="+t.TempDir())
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
