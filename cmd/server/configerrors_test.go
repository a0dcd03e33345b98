package main

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/testutil"
)

// TestConfigErrorsOneLine runs the binary on broken configuration files
// and checks that each stops it with a non-zero status and exactly one
// line on stderr, naming the file, the place and the fix.
func TestConfigErrorsOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	cases := []struct {
		name   string
		graphs string
		files  map[string]string
		code   int
		want   string // %d: the directory of langgraph.json
	}{
		{"JSON syntax", "{\"graphs\": {\"echo\": \"builtin:echo\"},\n}", nil, 1,
			`server: %d/langgraph.json:2:1: JSON syntax: invalid character '}' looking for beginning of object key string (JSON allows no comma after the last member)`},
		{"misspelt key", `{"graph": {"echo": "builtin:echo"}}`, nil, 1,
			`server: %d/langgraph.json:1:2: unknown key "graph" (did you mean "graphs"?)`},
		{"wrong type", `{"graphs": {"echo": 5}}`, nil, 1,
			`server: %d/langgraph.json:1:21: graphs.echo: want a string or an object, got the number 5`},
		{"wrong type in a section", `{"graphs": {"echo": "builtin:echo"}, "store": {"ttl": {"default_ttl": "1d"}}}`, nil, 1,
			`server: %d/langgraph.json:1:71: store.ttl.default_ttl: want a number, got the string "1d"`},
		{"empty agent spec", `{"graphs": {"agent": "./agent.yaml"}}`, map[string]string{"agent.yaml": "# to do\n"}, 1,
			`server: %d/langgraph.json: graphs.agent: invalid agent spec: %d/agent.yaml: the file is empty`},
		{"YAML syntax in a spec", `{"graphs": {"agent": "./agent.yaml"}}`, map[string]string{"agent.yaml": "model: gpt\nsystem_prompt: \"unclosed\n"}, 1,
			`server: %d/langgraph.json: graphs.agent: invalid agent spec: %d/agent.yaml:3:1: YAML syntax: found unexpected end of stream (while scanning a quoted scalar from 2:16)`},
		{"unknown key in a spec", `{"graphs": {"agent": "./agent.yaml"}}`, map[string]string{"agent.yaml": "model: gpt\ntool: [ls]\n"}, 1,
			`server: %d/langgraph.json: graphs.agent: invalid agent spec: %d/agent.yaml:2:1: unknown key "tool" (did you mean "tools"?)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			graphs := writeGraphs(t, c.graphs, c.files)
			r := runBinary(t, bin, nil, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--config", graphs)
			want := strings.ReplaceAll(c.want, "%d", filepath.Dir(graphs))
			if r.code != c.code || r.stderr != want+"\n" {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and the one line\n%s", r.code, r.stderr, c.code, want)
			}
		})
	}
	t.Run("missing --config file", func(t *testing.T) {
		r := runBinary(t, bin, nil, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
		want := "server: --config ./langgraph.json: no such file (run the server where your langgraph.json is, or name it with --config or AGENTSERVER_CONFIG)\n"
		if r.code != 2 || r.stderr != want {
			t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and the one line\n%s", r.code, r.stderr, want)
		}
	})
	// A bare port is that port on 127.0.0.1.
	t.Run("--addr with a bare port", func(t *testing.T) {
		_, port, err := net.SplitHostPort(freeAddr(t))
		if err != nil {
			t.Fatal(err)
		}
		graphs := writeGraphs(t, `{"graphs": {"echo": "builtin:echo"}}`, nil)
		logs, dataDir := &testutil.LogBuffer{}, t.TempDir()
		cmd := exec.Command(bin, "--addr", port, "--data-dir", dataDir, "--config", graphs, "--log-format", "json")
		cmd.Env = cleanEnv()
		if url := testutil.DatabaseURL(t, dataDir); url != "" {
			cmd.Env = append(cmd.Env, config.EnvDatabaseURL+"="+url)
		}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		testutil.Eventually(t, 20*time.Second, "the server answers on 127.0.0.1:"+port, func() bool {
			resp, err := http.Get("http://127.0.0.1:" + port + "/ok")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		// The listener answers before the last service has started, and
		// the serving line comes after that one.
		testutil.Eventually(t, 20*time.Second, "the serving line names 127.0.0.1:"+port, func() bool {
			return strings.Contains(logs.String(), `"addr":"127.0.0.1:`+port+`"`)
		})
	})
}
