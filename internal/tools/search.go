package tools

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"agentserver/internal/llm"
)

// Limits of glob and grep.
const (
	// maxWalkEntries bounds the entries one glob or grep call visits.
	maxWalkEntries = 100_000
	// MaxGrepMatches is where grep stops collecting matching lines.
	MaxGrepMatches = 1000
	// maxGrepLine is where grep cuts matching lines in content mode.
	maxGrepLine = 500
	// maxBraceExpansions bounds the patterns one {a,b} pattern expands to.
	maxBraceExpansions = 256
)

// Grep output modes.
const (
	GrepFilesWithMatches = "files_with_matches"
	GrepContent          = "content"
	GrepCount            = "count"
)

// NewGlob returns the glob tool.
func NewGlob() Tool {
	return &fileTool{
		spec: llm.ToolSpec{
			Name: NameGlob,
			Description: "Find files in the workspace whose path matches a glob pattern; returns " +
				"workspace-rooted paths, one per line, sorted. `*` and `?` match within one path " +
				"segment, `**` matches any number of directories, `[abc]` and `{a,b}` work as in a " +
				"shell. The pattern is relative to path: \"*.go\" matches only directly in it, " +
				"\"**/*.go\" at any depth.",
			Parameters: schema(map[string]any{
				"pattern": prop("string", "Glob pattern, e.g. \"**/*.py\" or \"docs/*.md\"."),
				"path":    prop("string", "Directory to search from. Defaults to \"/\"."),
			}, "pattern"),
		},
		run: runGlob,
	}
}

func runGlob(ctx context.Context, ws *Workspace, a args) (string, error) {
	pattern, err := a.str("pattern", true)
	if err != nil {
		return "", err
	}
	p, err := a.str("path", false)
	if err != nil {
		return "", err
	}
	pats, err := compileGlob("pattern", strings.TrimLeft(pattern, "/"))
	if err != nil {
		return "", err
	}
	rel, err := ws.Resolve(p)
	if err != nil {
		return "", err
	}
	var found []string
	capped, err := ws.walkFiles(ctx, rel, func(name, relToBase string) error {
		if pats.match(relToBase) {
			found = append(found, Display(name))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(found) == 0 && !capped {
		return "No files found", nil
	}
	slices.Sort(found)
	out := joinCapped(found, maxListEntries, "files")
	if capped {
		out += fmt.Sprintf("\n[stopped after visiting %d entries; narrow the path or pattern]", maxWalkEntries)
	}
	return out, nil
}

// NewGrep returns the grep tool.
func NewGrep() Tool {
	return &fileTool{
		spec: llm.ToolSpec{
			Name: NameGrep,
			Description: fmt.Sprintf("Search the text files in the workspace for lines matching a regular "+
				"expression (Go RE2 syntax: no backreferences or lookaround; escape special characters "+
				"such as ( [ . | to match them literally). Binary files are skipped. output_mode "+
				"\"files_with_matches\" (default) lists matching files, \"content\" shows matching lines "+
				"with their line numbers, \"count\" gives matches per file. Stops after %d matching lines.",
				MaxGrepMatches),
			Parameters: schema(map[string]any{
				"pattern": prop("string", "Regular expression to search for."),
				"path":    prop("string", "File or directory to search. Defaults to \"/\"."),
				"glob":    prop("string", "Only search files matching this glob, e.g. \"*.py\" (matched against the file name) or \"src/**/*.ts\" (matched against the path below path)."),
				"output_mode": map[string]any{
					"type":        "string",
					"enum":        []string{GrepFilesWithMatches, GrepContent, GrepCount},
					"description": "What to return. Defaults to \"files_with_matches\".",
				},
			}, "pattern"),
		},
		run: runGrep,
	}
}

type grepMatch struct {
	line int
	text string
}

func runGrep(ctx context.Context, ws *Workspace, a args) (string, error) {
	pattern, err := a.str("pattern", true)
	if err != nil {
		return "", err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", argError("pattern", "is not a valid regular expression: %v", err)
	}
	p, err := a.str("path", false)
	if err != nil {
		return "", err
	}
	globArg, err := a.str("glob", false)
	if err != nil {
		return "", err
	}
	mode, err := a.str("output_mode", false)
	if err != nil {
		return "", err
	}
	switch mode {
	case "":
		mode = GrepFilesWithMatches
	case GrepFilesWithMatches, GrepContent, GrepCount:
	default:
		return "", argError("output_mode", "must be %q, %q or %q", GrepFilesWithMatches, GrepContent, GrepCount)
	}
	var filter *globPattern
	if globArg != "" {
		if filter, err = compileGlob("glob", strings.TrimLeft(globArg, "/")); err != nil {
			return "", err
		}
	}
	rel, err := ws.Resolve(p)
	if err != nil {
		return "", err
	}

	results := map[string][]grepMatch{}
	total, tooLarge := 0, 0
	stopped := false
	capped, err := ws.walkFiles(ctx, rel, func(name, relToBase string) error {
		if filter != nil {
			target := path.Base(relToBase)
			if filter.hasSlash {
				target = relToBase
			}
			if !filter.match(target) {
				return nil
			}
		}
		data, err := ws.readFile(name)
		if err != nil {
			// Files that vanish, grow too large or turn into something
			// else mid-walk are skipped, not fatal.
			tooLarge++
			return nil
		}
		if isBinary(data) {
			return nil
		}
		disp := Display(name)
		for i, line := range splitLines(string(data)) {
			if !re.MatchString(line) {
				continue
			}
			results[disp] = append(results[disp], grepMatch{i + 1, line})
			total++
			if total >= MaxGrepMatches {
				stopped = true
				return fs.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var notes []string
	if stopped {
		notes = append(notes, fmt.Sprintf("[stopped after %d matching lines; narrow the pattern, path or glob]", MaxGrepMatches))
	}
	if capped {
		notes = append(notes, fmt.Sprintf("[stopped after visiting %d entries; narrow the path or glob]", maxWalkEntries))
	}
	if tooLarge > 0 {
		notes = append(notes, fmt.Sprintf("[skipped %d unreadable files or files larger than %d bytes]", tooLarge, MaxFileSize))
	}
	out := formatGrep(results, mode)
	if len(notes) > 0 {
		out += "\n\n" + strings.Join(notes, "\n")
	}
	return out, nil
}

func formatGrep(results map[string][]grepMatch, mode string) string {
	if len(results) == 0 {
		return "No matches found"
	}
	files := make([]string, 0, len(results))
	for f := range results {
		files = append(files, f)
	}
	slices.Sort(files)
	var b strings.Builder
	for i, f := range files {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch mode {
		case GrepFilesWithMatches:
			b.WriteString(f)
		case GrepCount:
			fmt.Fprintf(&b, "%s: %d", f, len(results[f]))
		case GrepContent:
			b.WriteString(f + ":")
			for _, m := range results[f] {
				fmt.Fprintf(&b, "\n  %d: %s", m.line, cutLine(m.text, maxGrepLine))
			}
		}
	}
	return b.String()
}

// walkFiles calls fn for every regular file under rel (a directory or a
// file), with its workspace-relative name and its path relative to rel.
// Symlinks are neither followed nor reported; unreadable directories are
// skipped. It reports whether it stopped at maxWalkEntries. fn may return
// fs.SkipAll to stop early.
func (w *Workspace) walkFiles(ctx context.Context, rel string, fn func(name, relToBase string) error) (capped bool, err error) {
	fsys := w.root.FS()
	if _, err := fs.Stat(fsys, rel); err != nil {
		return false, fsError("path", Display(rel), err)
	}
	visited := 0
	err = fs.WalkDir(fsys, rel, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if name == rel {
				return fsError("path", Display(rel), err)
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		visited++
		if visited > maxWalkEntries {
			capped = true
			return fs.SkipAll
		}
		if d.Type()&fs.ModeSymlink != 0 || !d.Type().IsRegular() {
			return nil
		}
		relToBase := path.Base(name)
		if name != rel {
			relToBase = strings.TrimPrefix(name, rel+"/")
			if rel == "." {
				relToBase = name
			}
		}
		return fn(name, relToBase)
	})
	if err != nil {
		return capped, err
	}
	return capped, nil
}

// globPattern is a compiled glob: the alternatives of its {a,b} groups,
// each split into path segments.
type globPattern struct {
	alts     [][]string
	hasSlash bool
}

func compileGlob(arg, pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, argError(arg, "must not be empty")
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, argError(arg, "contains a NUL byte")
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, argError(arg, "%v", err)
	}
	g := &globPattern{hasSlash: strings.Contains(pattern, "/")}
	for _, e := range expanded {
		segs := strings.Split(path.Clean(e), "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, argError(arg, "is not a valid glob pattern: %v", err)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the slash-separated name matches any alternative.
func (g *globPattern) match(name string) bool {
	parts := strings.Split(name, "/")
	for _, segs := range g.alts {
		if matchSegments(segs, parts) {
			return true
		}
	}
	return false
}

// matchSegments matches pattern segments against path segments; a "**"
// segment matches zero or more path segments. Memoised, so patterns with
// many "**" stay linear in practice.
func matchSegments(segs, parts []string) bool {
	type key struct{ i, j int }
	memo := map[key]bool{}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		k := key{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		var ok bool
		switch {
		case i == len(segs):
			ok = j == len(parts)
		case segs[i] == "**":
			for jj := j; jj <= len(parts) && !ok; jj++ {
				ok = rec(i+1, jj)
			}
		case j == len(parts):
			ok = false
		default:
			m, _ := path.Match(segs[i], parts[j])
			ok = m && rec(i+1, j+1)
		}
		memo[k] = ok
		return ok
	}
	return rec(0, 0)
}

// expandBraces expands shell-style {a,b} groups (nested ones too).
func expandBraces(p string) ([]string, error) {
	var out []string
	var rec func(s string) error
	rec = func(s string) error {
		if len(out) >= maxBraceExpansions {
			return fmt.Errorf("expands to more than %d patterns", maxBraceExpansions)
		}
		depth, open := 0, -1
		var commas []int
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '{':
				if depth == 0 {
					open = i
					commas = commas[:0]
				}
				depth++
			case ',':
				if depth == 1 {
					commas = append(commas, i)
				}
			case '}':
				if depth == 0 {
					continue
				}
				depth--
				if depth > 0 {
					continue
				}
				prefix, suffix := s[:open], s[i+1:]
				start := open + 1
				for _, c := range append(commas, i) {
					if err := rec(prefix + s[start:c] + suffix); err != nil {
						return err
					}
					start = c + 1
				}
				return nil
			}
		}
		out = append(out, s)
		return nil
	}
	if err := rec(p); err != nil {
		return nil, err
	}
	return out, nil
}
