package tools

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func searchFixture(t *testing.T) string {
	t.Helper()
	ws := newWorkspace(t)
	for name, content := range map[string]string{
		"main.go":              "package main\n\nfunc main() { println(\"MARKER\") }\n",
		"README.md":            "# Title\nMARKER: write docs\n",
		"src/a.go":             "package src\n// MARKER one\n// MARKER two\n",
		"src/deep/b.go":        "package deep\n",
		"src/deep/c.ts":        "// marker lower\n",
		"docs/guide.md":        "nothing here\n",
		"bin/tool":             "MARKER\x00binary",
		"weird (name)[1].txt":  "f(x) = [1]\n",
		".git/config":          "MARKER hidden\n",
		"src/deep/deeper/d.go": "package deeper // MARKER\n",
	} {
		writeHost(t, filepath.Join(ws, filepath.FromSlash(name)), content)
	}
	return ws
}

func TestGlob(t *testing.T) {
	t.Parallel()
	ws := searchFixture(t)
	g := NewGlob()
	for _, c := range []struct {
		pattern, path string
		want          []string
	}{
		{"*.go", "", []string{"/main.go"}},
		{"**/*.go", "", []string{"/main.go", "/src/a.go", "/src/deep/b.go", "/src/deep/deeper/d.go"}},
		{"/**/*.go", "/", []string{"/main.go", "/src/a.go", "/src/deep/b.go", "/src/deep/deeper/d.go"}},
		{"*.go", "/src", []string{"/src/a.go"}},
		{"**/*.go", "src/deep", []string{"/src/deep/b.go", "/src/deep/deeper/d.go"}},
		{"src/**/b.go", "", []string{"/src/deep/b.go"}},
		{"src/*/*.{go,ts}", "", []string{"/src/deep/b.go", "/src/deep/c.ts"}},
		{"**/*.md", "", []string{"/README.md", "/docs/guide.md"}},
		{"?ain.go", "", []string{"/main.go"}},
		{"[A-Z]*", "", []string{"/README.md"}},
		{"src/**", "", []string{"/src/a.go", "/src/deep/b.go", "/src/deep/c.ts", "/src/deep/deeper/d.go"}},
		{"**/config", "", []string{"/.git/config"}},
	} {
		got := mustCall(t, g, ws, map[string]any{"pattern": c.pattern, "path": c.path})
		if want := strings.Join(c.want, "\n"); got != want {
			t.Errorf("glob(%q, %q) = %q, want %q", c.pattern, c.path, got, want)
		}
	}
	if got := mustCall(t, g, ws, map[string]any{"pattern": "*.rs"}); got != "No files found" {
		t.Errorf("no match = %q", got)
	}
	wantErr(t, g, ws, map[string]any{"pattern": "[", "path": "/"}, "not a valid glob pattern")
	wantErr(t, g, ws, map[string]any{}, `"pattern": is required`)
	wantErr(t, g, ws, map[string]any{"pattern": "*", "path": "nope"}, `path "/nope" not found`)
	wantErr(t, g, ws, map[string]any{"pattern": "*", "path": "../"}, "outside the workspace")
}

func TestGrep(t *testing.T) {
	t.Parallel()
	ws := searchFixture(t)
	g := NewGrep()

	got := mustCall(t, g, ws, map[string]any{"pattern": "MARKER"})
	if want := "/.git/config\n/README.md\n/main.go\n/src/a.go\n/src/deep/deeper/d.go"; got != want {
		t.Errorf("files_with_matches = %q, want %q", got, want)
	}
	got = mustCall(t, g, ws, map[string]any{"pattern": "MARKER", "path": "/src", "output_mode": "content"})
	if want := "/src/a.go:\n  2: // MARKER one\n  3: // MARKER two\n/src/deep/deeper/d.go:\n  1: package deeper // MARKER"; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	got = mustCall(t, g, ws, map[string]any{"pattern": "MARKER", "output_mode": "count", "glob": "*.go"})
	if want := "/main.go: 1\n/src/a.go: 2\n/src/deep/deeper/d.go: 1"; got != want {
		t.Errorf("count = %q, want %q", got, want)
	}
	got = mustCall(t, g, ws, map[string]any{"pattern": "(?i)marker", "glob": "src/**/*.{ts,go}"})
	if want := "/src/a.go\n/src/deep/c.ts\n/src/deep/deeper/d.go"; got != want {
		t.Errorf("glob with slash = %q, want %q", got, want)
	}
	got = mustCall(t, g, ws, map[string]any{"pattern": `f\(x\) = \[1\]`})
	if got != "/weird (name)[1].txt" {
		t.Errorf("escaped regex = %q", got)
	}
	got = mustCall(t, g, ws, map[string]any{"pattern": "MARKER", "path": "src/a.go", "output_mode": "count"})
	if got != "/src/a.go: 2" {
		t.Errorf("grep in one file = %q", got)
	}
	if got := mustCall(t, g, ws, map[string]any{"pattern": "binary"}); got != "No matches found" {
		t.Errorf("binary file searched: %q", got)
	}
	wantErr(t, g, ws, map[string]any{"pattern": "a(b"}, "not a valid regular expression")
	wantErr(t, g, ws, map[string]any{"pattern": "x", "output_mode": "lines"}, `"output_mode": must be`)
	wantErr(t, g, ws, map[string]any{"pattern": "x", "glob": "[", "path": "/"}, "not a valid glob")
}

func TestGrepStopsAtMaxMatches(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	var b strings.Builder
	for i := range MaxGrepMatches + 500 {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	writeHost(t, filepath.Join(ws, "a.txt"), b.String())
	writeHost(t, filepath.Join(ws, "b.txt"), "hit\n")
	got := mustCall(t, NewGrep(), ws, map[string]any{"pattern": "hit", "output_mode": "count"})
	want := fmt.Sprintf("/a.txt: %d\n\n[stopped after %d matching lines; narrow the pattern, path or glob]", MaxGrepMatches, MaxGrepMatches)
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	long := strings.Repeat("z", 3*maxGrepLine)
	writeHost(t, filepath.Join(ws, "c.txt"), long+"\n")
	got = mustCall(t, NewGrep(), ws, map[string]any{"pattern": "zzz", "output_mode": "content"})
	if len(got) > maxGrepLine+200 || !strings.Contains(got, "[line truncated") {
		t.Errorf("long match line not cut: %d bytes", len(got))
	}
}

func TestMatchSegments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"**", "a/b/c", true},
		{"**/c", "c", true},
		{"a/**/c", "a/c", true},
		{"a/**/c", "a/x/y/c", true},
		{"a/**/c", "a/x/y/d", false},
		{"*.go", "a/b.go", false},
		{"**/**/*.go", "a/b/c.go", true},
		{"a/**", "a", true},
		{"*", "", true},
		{strings.Repeat("**/", 20) + "x", strings.Repeat("a/", 40) + "y", false},
	} {
		g, err := compileGlob("pattern", c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.match(c.name); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"a":                {"a"},
		"*.{go,md}":        {"*.go", "*.md"},
		"{a,b}/{c,d}":      {"a/c", "a/d", "b/c", "b/d"},
		"x{a,{b,c}}y":      {"xay", "xby", "xcy"},
		"{single}":         {"single"},
		"unclosed{a,b":     {"unclosed{a,b"},
		`esc\{a,b}`:        {`esc\{a,b}`},
		"{,pre}fix":        {"fix", "prefix"},
		"stray}brace{x,y}": {"stray}bracex", "stray}bracey"},
	} {
		got, err := expandBraces(in)
		if err != nil {
			t.Errorf("expandBraces(%q): %v", in, err)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("expandBraces(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := expandBraces(strings.Repeat("{a,b}", 10)); err == nil {
		t.Error("1024 expansions accepted")
	}
}
