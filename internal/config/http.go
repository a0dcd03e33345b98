package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Module is a JavaScript module of the project and one of its exports, as
// langgraph.json names them ("./src/app.ts:app").
type Module struct {
	// Path is the module's file, absolute.
	Path string
	// Export is the export's name ("default" when none is given).
	Export string
}

// moduleOf resolves a "path:export" reference of the langgraph.json at
// file; key names it in errors.
func moduleOf(file, key, ref string) (*Module, error) {
	p, export := ref, ""
	if i := strings.LastIndex(ref, ":"); i > 0 && !strings.ContainsAny(ref[i+1:], `/\.`) {
		p, export = ref[:i], ref[i+1:]
	}
	ext := strings.ToLower(filepath.Ext(p))
	switch ext {
	case ".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx":
	default:
		return nil, fmt.Errorf("%s %q: want a JavaScript or TypeScript module and its export (\"./src/auth.ts:auth\"); Python modules are not served", key, ref)
	}
	if export == "" {
		export = "default"
	}
	return &Module{Path: resolveNear(file, p), Export: export}, nil
}

// HTTP is the http section of langgraph.json: LangGraph's custom routes
// (app) and who may call them.
type HTTP struct {
	// App is the module exporting a Hono app whose routes the server
	// serves behind its own (nil: none).
	App *Module
	// CustomRouteAuth puts the app's routes under the server's auth
	// (LangGraph's enable_custom_route_auth; default true here, where
	// LangGraph's is false: a route nobody decided about is not public).
	CustomRouteAuth bool
	// PublicRoutes are app routes served without credentials even so:
	// "/path" (any method) or "METHOD /path", with the path as the app
	// registered it ("/webhooks/:id").
	PublicRoutes []string
}

type httpFile struct {
	HTTP *struct {
		App                   string   `json:"app"`
		EnableCustomRouteAuth *bool    `json:"enable_custom_route_auth"`
		PublicRoutes          []string `json:"public_routes"`
	} `json:"http"`
}

// LoadHTTP reads and checks the http section of the langgraph.json at
// path.
func LoadHTTP(path string) (HTTP, error) {
	out := HTTP{CustomRouteAuth: true}
	var f httpFile
	// LangGraph's other keys of the section are left to it.
	if err := readSections(path, &f, "", "http"); err != nil {
		return out, err
	}
	if f.HTTP == nil {
		return out, nil
	}
	var errs []error
	if f.HTTP.App != "" {
		m, err := moduleOf(path, "http.app", f.HTTP.App)
		errs = append(errs, err)
		out.App = m
	}
	if f.HTTP.EnableCustomRouteAuth != nil {
		out.CustomRouteAuth = *f.HTTP.EnableCustomRouteAuth
	}
	for _, r := range f.HTTP.PublicRoutes {
		method, p, hasMethod := strings.Cut(r, " ")
		if !hasMethod {
			method, p = "", r
		}
		switch {
		case !strings.HasPrefix(p, "/"):
			errs = append(errs, fmt.Errorf("http.public_routes: %q: want \"/path\" or \"METHOD /path\"", r))
		case strings.ToUpper(method) != method:
			errs = append(errs, fmt.Errorf("http.public_routes: %q: write the method in capitals", r))
		}
	}
	out.PublicRoutes = f.HTTP.PublicRoutes
	if len(out.PublicRoutes) > 0 && out.App == nil {
		errs = append(errs, errors.New("http.public_routes needs http.app"))
	}
	if err := errors.Join(errs...); err != nil {
		return HTTP{}, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
