package jsworker

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// nodeFiles is the worker's code, versioned with the server.
//
//go:embed node/worker.mjs node/ts-hooks.mjs node/tsschema.mjs node/package.json
var nodeFiles embed.FS

// install writes the worker's files to a folder of dir named after their
// hash (so that servers of different versions sharing dir never mix their
// files) and returns the path of the worker's entry point.
func install(dir string) (string, error) {
	h := sha256.New()
	names := []string{"node/package.json", "node/ts-hooks.mjs", "node/tsschema.mjs", "node/worker.mjs"}
	contents := make([][]byte, len(names))
	for i, name := range names {
		b, err := fs.ReadFile(nodeFiles, name)
		if err != nil {
			return "", err
		}
		contents[i] = b
		h.Write([]byte(name))
		h.Write(b)
	}
	target := filepath.Join(dir, "graph-worker-"+hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(target, 0o755); err != nil {
		return "", fmt.Errorf("graph worker files: %w", err)
	}
	for i, name := range names {
		path := filepath.Join(target, filepath.Base(name))
		if cur, err := os.ReadFile(path); err == nil && string(cur) == string(contents[i]) {
			continue
		}
		// Written aside and renamed, so that a worker starting meanwhile
		// never reads half a file.
		tmp, err := os.CreateTemp(target, ".tmp-*")
		if err != nil {
			return "", fmt.Errorf("graph worker files: %w", err)
		}
		_, werr := tmp.Write(contents[i])
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("graph worker files: write %s: %w", name, errors.Join(werr, cerr))
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return "", fmt.Errorf("graph worker files: %w", err)
		}
	}
	return filepath.Join(target, "worker.mjs"), nil
}

// MinNodeMajor is the oldest Node major version the worker runs on.
const MinNodeMajor = 20

var nodeVersionRE = regexp.MustCompile(`^v?(\d+)(?:\.(\d+))?`)

// CheckNode runs node --version and checks it against the server's minimum
// and want (langgraph.json's node_version: "20", "20.11", ">=20"; "" for
// no requirement). It returns the version node printed.
func CheckNode(ctx context.Context, node, want string) (string, error) {
	path, err := exec.LookPath(node)
	if err != nil {
		return "", fmt.Errorf("node (%s) is not installed or not on PATH: JavaScript graphs need Node %d or newer", node, MinNodeMajor)
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version failed: %w", path, err)
	}
	have := strings.TrimSpace(string(out))
	m := nodeVersionRE.FindStringSubmatch(have)
	if m == nil {
		return have, fmt.Errorf("%s --version printed %q, not a version", path, have)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < MinNodeMajor {
		return have, fmt.Errorf("node %s (%s) is too old: JavaScript graphs need Node %d or newer", have, path, MinNodeMajor)
	}
	if want == "" {
		return have, nil
	}
	w := nodeVersionRE.FindStringSubmatch(strings.TrimLeft(strings.TrimSpace(want), ">=^~ "))
	if w == nil {
		return have, fmt.Errorf("node_version %q is not a version (write it as \"20\" or \"20.11\")", want)
	}
	wantMajor, _ := strconv.Atoi(w[1])
	wantMinor, _ := strconv.Atoi(w[2])
	if major < wantMajor || major == wantMajor && minor < wantMinor {
		return have, fmt.Errorf("node %s (%s) is older than langgraph.json's node_version %q", have, path, want)
	}
	return have, nil
}
