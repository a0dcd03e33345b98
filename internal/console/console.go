package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// Prefix is the path the console is served under.
const Prefix = "/ui"

//go:embed assets
var embedded embed.FS

// assets is the embedded assets directory as the root of the console.
var assets = mustSub(embedded, "assets")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// securityHeaders keep the pages to this origin and their declared types.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
	// The assets change with the binary; revalidating keeps a browser from
	// mixing files of two versions.
	"Cache-Control": "no-cache",
}

// Register adds GET (and HEAD) /, /ui and /ui/* to e. / and /ui redirect
// to /ui/, where the pages' relative asset paths resolve under the prefix
// (/ with 302: what the root shows may change; /ui with 301).
func Register(e *echo.Echo) {
	e.GET("/", toConsole)
	e.HEAD("/", toConsole)
	e.GET(Prefix, toSlash)
	e.HEAD(Prefix, toSlash)
	e.GET(Prefix+"/*", serve)
	e.HEAD(Prefix+"/*", serve)
}

// toSlash redirects /ui to /ui/, keeping the query.
func toSlash(c echo.Context) error {
	target := Prefix + "/"
	if q := c.Request().URL.RawQuery; q != "" {
		target += "?" + q
	}
	return c.Redirect(http.StatusMovedPermanently, target)
}

// toConsole sends a browser opening the server's root to the console.
func toConsole(c echo.Context) error {
	return c.Redirect(http.StatusFound, Prefix+"/")
}

// Public reports whether r reads a console asset, which needs no API key.
func Public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || r.URL.Path == Prefix || strings.HasPrefix(r.URL.Path, Prefix+"/")
}

// serve answers one console path: the asset it names, index.html for a page
// of the application, or 404.
func serve(c echo.Context) error {
	name := assetName(c.Request().URL.Path)
	body, err := fs.ReadFile(assets, name)
	if err != nil && path.Ext(name) == "" {
		name = "index.html"
		body, err = fs.ReadFile(assets, name)
	}
	if err != nil {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
	return c.Blob(http.StatusOK, contentType(name), body)
}

// assetName maps a request path to a file name inside assets; the
// application's root is index.html.
func assetName(urlPath string) string {
	name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(urlPath, Prefix)), "/")
	if name == "" {
		return "index.html"
	}
	return name
}

// mediaTypes are the types of the console's files, fixed here rather than
// read from the machine's MIME tables, which differ between systems.
var mediaTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

// contentType is the media type of an asset, from its extension.
func contentType(name string) string {
	if t, ok := mediaTypes[path.Ext(name)]; ok {
		return t
	}
	return "application/octet-stream"
}
