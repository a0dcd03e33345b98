package graphs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"agentserver/internal/configfile"
	"agentserver/internal/graph"
)

// ErrInvalidConfig reports a langgraph.json that cannot be served.
var ErrInvalidConfig = errors.New("invalid graph configuration")

// BuiltinPrefix marks a graph source compiled into the server.
const BuiltinPrefix = "builtin:"

// Node is one node of a graph drawing.
type Node struct {
	ID   string         `json:"id"`
	Type string         `json:"type,omitempty"`
	Data any            `json:"data,omitempty"`
	Meta map[string]any `json:"metadata,omitempty"`
}

// Edge is one edge of a graph drawing.
type Edge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional,omitempty"`
	Data        any    `json:"data,omitempty"`
}

// Definition describes one served graph.
type Definition struct {
	ID            string
	Description   string
	Source        string
	InputSchema   map[string]any
	OutputSchema  map[string]any
	StateSchema   map[string]any
	ConfigSchema  map[string]any
	ContextSchema map[string]any
	Nodes         []Node
	Edges         []Edge
	// Graph is the executable graph of a graph the Go executor runs; nil
	// for graph code hosted by a worker.
	Graph *graph.Graph
	// Worker runs graph code hosted outside the server process (a Node
	// graph worker); nil for Go graphs.
	Worker graph.Runner
	// Subgraphs are the graph's subgraphs by namespace ("node",
	// "node|inner"), each with its schemas (nil: none).
	Subgraphs map[string]*Definition
	// File is the spec file the graph was compiled from (its source
	// resolved against langgraph.json's directory); empty for built-ins.
	File string
	// stamp is File's size and modification time, taken before it was read.
	stamp fileStamp
}

// Runner returns what runs the graph: its worker, or ex bound to its Go
// graph; nil when it has neither.
func (d *Definition) Runner(ex *graph.Executor) graph.Runner {
	switch {
	case d.Worker != nil:
		return d.Worker
	case d.Graph != nil:
		return ex.Bind(d.Graph)
	}
	return nil
}

// Registry is the set of graphs the server serves. Its graph ids are fixed;
// the definition of a spec-file graph is replaced when a Reloader reloads it.
type Registry struct {
	ids []string
	// file is the langgraph.json the registry was loaded from ("" when it
	// was built from definitions) and fileStamp its stamp before reading.
	file      string
	fileStamp fileStamp

	mu   sync.RWMutex
	defs map[string]*Definition
}

// NewRegistry builds a registry from definitions; ids must be unique.
func NewRegistry(defs ...*Definition) (*Registry, error) {
	r := &Registry{defs: map[string]*Definition{}}
	for _, d := range defs {
		if _, dup := r.defs[d.ID]; dup {
			return nil, fmt.Errorf("%w: graph %q is defined twice", ErrInvalidConfig, d.ID)
		}
		r.defs[d.ID] = d
		r.ids = append(r.ids, d.ID)
	}
	sort.Strings(r.ids)
	return r, nil
}

// Get returns the current definition of a graph. A caller that keeps it
// (a run) keeps that version across reloads.
func (r *Registry) Get(id string) (*Definition, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.defs[id]
	return d, ok
}

// Replace installs a new definition of a graph the registry serves (a
// JavaScript graph whose workers reloaded it): new runs and the
// assistants' graph info use it, runs already executing keep theirs.
func (r *Registry) Replace(d *Definition) error {
	if _, ok := r.Get(d.ID); !ok {
		return fmt.Errorf("%w: graph %q is not served", ErrInvalidConfig, d.ID)
	}
	r.replace(d)
	return nil
}

// replace installs a new definition of a served graph.
func (r *Registry) replace(d *Definition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.defs[d.ID] = d
}

// specGraphs returns the current definitions of the graphs compiled from
// spec files, in id order.
func (r *Registry) specGraphs() []*Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Definition
	for _, id := range r.ids {
		if d := r.defs[id]; d.File != "" {
			out = append(out, d)
		}
	}
	return out
}

// IDs lists the graph ids in sorted order.
func (r *Registry) IDs() []string {
	return append([]string(nil), r.ids...)
}

// File is the parsed langgraph.json.
type File struct {
	Graphs       map[string]Entry `json:"graphs"`
	Env          any              `json:"env,omitempty"`
	Dependencies []string         `json:"dependencies,omitempty"`
	// NodeVersion is the Node version JavaScript graphs need.
	NodeVersion string `json:"node_version,omitempty"`
	otherKeys
}

// Entry is one graph of langgraph.json: a source string, or an object
// {"path": source, "description": text}.
type Entry struct {
	Path        string `json:"path"`
	Description string `json:"description"`
}

// UnmarshalJSON reads a source string or the object form.
func (e *Entry) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &e.Path); err == nil {
		return nil
	}
	type plain Entry
	return json.Unmarshal(b, (*plain)(e))
}

// otherKeys are the top-level keys of langgraph.json this package does
// not read: the sections the config package reads (checkpointer, store,
// auth), and the keys LangGraph's CLI reads to build images and serve
// Python graphs, which this server ignores. Any other key is refused.
type otherKeys struct {
	Schema          json.RawMessage `json:"$schema"`
	Checkpointer    json.RawMessage `json:"checkpointer"`
	Store           json.RawMessage `json:"store"`
	Auth            json.RawMessage `json:"auth"`
	HTTP            json.RawMessage `json:"http"`
	Webhooks        json.RawMessage `json:"webhooks"`
	UI              json.RawMessage `json:"ui"`
	UIConfig        json.RawMessage `json:"ui_config"`
	PythonVersion   json.RawMessage `json:"python_version"`
	PipConfigFile   json.RawMessage `json:"pip_config_file"`
	PipInstaller    json.RawMessage `json:"pip_installer"`
	DockerfileLines json.RawMessage `json:"dockerfile_lines"`
	ImageDistro     json.RawMessage `json:"image_distro"`
	BaseImage       json.RawMessage `json:"base_image"`
	APIVersion      json.RawMessage `json:"api_version"`
	KeepPkgTools    json.RawMessage `json:"keep_pkg_tools"`
}

// SourceResolver builds the graph of a source that is not built in (an agent
// spec file); path is resolved against langgraph.json's directory.
type SourceResolver func(id, path string) (*Definition, error)

// Sources builds the graphs of langgraph.json that are not built in.
type Sources struct {
	// Spec compiles agent spec files (nil: refused).
	Spec SourceResolver
	// Code builds the definition of a JavaScript graph (nil: refused).
	Code CodeResolver
}

// Load reads langgraph.json at path, loads its env file and returns the
// registry of its graphs. resolve handles sources that are not built in; nil
// accepts built-ins only.
func Load(path string, resolve SourceResolver) (*Registry, error) {
	return LoadWith(path, Sources{Spec: resolve})
}

// readFile reads and parses langgraph.json.
func readFile(path string) (File, error) {
	var f File
	if err := configfile.ReadFile(path, &f, configfile.Options{}); err != nil {
		var ce *configfile.Error
		if errors.As(err, &ce) {
			return File{}, invalidConfig{err}
		}
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(f.Graphs) == 0 {
		return f, invalidConfig{fmt.Errorf("%s: \"graphs\" is empty: name at least one graph, e.g. {\"graphs\": {\"echo\": \"builtin:echo\"}}", path)}
	}
	return f, nil
}

// invalidConfig is an ErrInvalidConfig whose message is its cause's alone
// (which names the file and the place in it).
type invalidConfig struct{ error }

func (e invalidConfig) Unwrap() error      { return e.error }
func (invalidConfig) Is(target error) bool { return target == ErrInvalidConfig }

// LoadWith is Load with a resolver for each kind of source.
func LoadWith(path string, src Sources) (*Registry, error) {
	stamp := stampOf(path)
	f, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if err := loadEnv(filepath.Dir(path), f.Env); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var defs []*Definition
	for id, raw := range f.Graphs {
		d, err := resolveEntry(filepath.Dir(path), id, raw, src)
		if err != nil {
			return nil, fmt.Errorf("%s: graphs.%s: %w", path, id, err)
		}
		defs = append(defs, d)
	}
	r, err := NewRegistry(defs...)
	if err != nil {
		return nil, err
	}
	r.file, r.fileStamp = path, stamp
	return r, nil
}

// resolveEntry builds the definition of one graph entry.
func resolveEntry(dir, id string, e Entry, src Sources) (*Definition, error) {
	source, description, err := parseEntry(e)
	if err != nil {
		return nil, err
	}
	if codeLanguage(source) == "JavaScript" {
		if src.Code == nil {
			return nil, fmt.Errorf("%w: %q points to JavaScript graph code, which this server was built without", ErrInvalidConfig, source)
		}
		d, err := src.Code(codeEntry(dir, id, source, description))
		if err != nil {
			return nil, err
		}
		d.ID, d.Source = id, source
		if description != "" {
			d.Description = description
		}
		return d, nil
	}
	d, err := resolveSource(dir, id, source, src.Spec)
	if err == nil && description != "" {
		d.Description = description
	}
	return d, err
}

func resolveSource(dir, id, src string, resolve SourceResolver) (*Definition, error) {
	if name, ok := strings.CutPrefix(src, BuiltinPrefix); ok {
		build, known := builtins[name]
		if !known {
			return nil, fmt.Errorf("%w: unknown built-in graph %q (known: %s)", ErrInvalidConfig, name, strings.Join(builtinNames(), ", "))
		}
		d := build()
		d.ID, d.Source = id, src
		return d, nil
	}
	if codeLanguage(src) == "Python" {
		return nil, fmt.Errorf("%w: %q points to Python graph code: Python graphs are not served yet (a Python worker can be written against the worker protocol in docs/js-graphs.md#worker-protocol); this server runs LangGraph.js graphs, agent specs (YAML or JSON files) and the built-in graphs", ErrInvalidConfig, src)
	}
	if resolve == nil {
		return nil, fmt.Errorf("%w: source %q is not a built-in graph (use %s<name>)", ErrInvalidConfig, src, BuiltinPrefix)
	}
	path := src
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return compileSpec(id, src, path, resolve)
}

// compileSpec builds the graph id from the spec file at path, stamping the
// file before it is read so that an edit made while reading is seen by the
// next check.
func compileSpec(id, src, path string, resolve SourceResolver) (*Definition, error) {
	stamp := stampOf(path)
	d, err := resolve(id, path)
	if err != nil {
		return nil, err
	}
	d.ID, d.Source, d.File, d.stamp = id, src, path, stamp
	return d, nil
}

// codeLanguage names the language of a LangGraph graph-code source such as
// "./agent.py:graph", "my_pkg.agent:graph" or "./src/agent.ts:graph", or
// returns "".
func codeLanguage(src string) string {
	file, _ := splitExport(src)
	switch strings.ToLower(filepath.Ext(file)) {
	case ".py":
		return "Python"
	case ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx":
		return "JavaScript"
	}
	if pythonModule.MatchString(src) {
		return "Python"
	}
	return ""
}

// pythonModule matches LangGraph's Python module form, "pkg.mod:graph".
var pythonModule = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$`)

// ApplyEnv loads the "env" entry of the langgraph.json at path into the
// process environment (variables already set win), as Load does; the
// server calls it before it starts graph workers, which inherit it.
func ApplyEnv(path string) error {
	f, err := readFile(path)
	if err != nil {
		return err
	}
	if err := loadEnv(filepath.Dir(path), f.Env); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// loadEnv applies the "env" entry: a .env file path or an inline object.
// Variables already present in the environment win.
func loadEnv(dir string, env any) error {
	switch e := env.(type) {
	case nil:
		return nil
	case map[string]any:
		for k, v := range e {
			if _, set := os.LookupEnv(k); !set {
				os.Setenv(k, fmt.Sprint(v))
			}
		}
		return nil
	case string:
		path := e
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		return loadEnvFile(path)
	default:
		return fmt.Errorf("%w: \"env\" must be a file path or an object", ErrInvalidConfig)
	}
}

func loadEnvFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open env file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%w: %s:%d: expected KEY=VALUE", ErrInvalidConfig, path, n)
		}
		k = strings.TrimSpace(k)
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		if _, set := os.LookupEnv(k); !set {
			os.Setenv(k, v)
		}
	}
	return sc.Err()
}
