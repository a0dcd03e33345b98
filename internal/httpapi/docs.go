package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"agentserver/api"
)

// The contract routes serve the embedded OpenAPI document: GET /openapi.json
// as JSON and GET /docs as a reference page rendered here, once, at start-up.
// They are plain echo routes beside the generated ones rather than operations
// of api/openapi.yaml: a document that listed itself would only add a
// self-describing operation and an SDK method nobody calls, the strict
// handler types are JSON-only while /docs is HTML, and the request validator
// has nothing to check on a GET without parameters. Like /ok they need no
// API key (see publicPaths).

// docsCSS styles the reference page; it is embedded so the page needs
// nothing from the network.
//
//go:embed docs.css
var docsCSS string

// registerContractRoutes adds GET /openapi.json and GET /docs.
func registerContractRoutes(e *echo.Echo) error {
	doc, err := api.GetSpec()
	if err != nil {
		return fmt.Errorf("load embedded spec: %w", err)
	}
	spec, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode embedded spec: %w", err)
	}
	page, err := renderDocs(doc)
	if err != nil {
		return fmt.Errorf("render API reference: %w", err)
	}
	e.GET("/openapi.json", func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, spec)
	})
	e.GET("/docs", func(c echo.Context) error {
		return c.HTMLBlob(http.StatusOK, page)
	})
	return nil
}

// docsPage is what the reference page template shows.
type docsPage struct {
	Title, Version, Description string
	CSS                         template.CSS
	Tags                        []docsTag
	Schemas                     []docsSchema
}

type docsTag struct {
	Name       string
	Operations []docsOperation
}

type docsOperation struct {
	ID, Method, Path, Summary, Description string
	Parameters                             []docsField
	// Body is the request body's schema ("" without one); BodyRequired
	// tells whether it must be sent.
	Body         docsType
	BodyRequired bool
	Responses    []docsResponse
}

// docsField is a parameter or a schema property.
type docsField struct {
	Name, In, Description string
	Required              bool
	Type                  docsType
}

// docsType names a schema: a component (linked to its section) or an
// inline type such as "string" or "array of Thread".
type docsType struct {
	Text string
	// Anchor is the component schema the text names, if any.
	Anchor string
}

type docsResponse struct {
	Status, Description string
	Type                docsType
}

type docsSchema struct {
	Name, Description string
	Type              docsType
	Properties        []docsField
}

// methodOrder lists HTTP methods in the order a path's operations are shown.
var methodOrder = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// renderDocs renders the reference page of doc.
func renderDocs(doc *openapi3.T) ([]byte, error) {
	page := docsPage{CSS: template.CSS(docsCSS), Tags: docsTags(doc), Schemas: docsSchemas(doc)}
	if doc.Info != nil {
		page.Title, page.Version, page.Description = doc.Info.Title, doc.Info.Version, doc.Info.Description
	}
	var buf bytes.Buffer
	if err := docsTemplate.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// docsTags groups the operations by their first tag, in the order the
// document declares its tags; untagged operations come last as "Other".
func docsTags(doc *openapi3.T) []docsTag {
	byTag := map[string][]docsOperation{}
	for _, path := range doc.Paths.Keys() {
		ops := doc.Paths.Value(path).Operations()
		for _, method := range methodOrder {
			op := ops[method]
			if op == nil {
				continue
			}
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			byTag[tag] = append(byTag[tag], docsOperationOf(method, path, op))
		}
	}
	var out []docsTag
	for _, t := range doc.Tags {
		if ops := byTag[t.Name]; len(ops) > 0 {
			out = append(out, docsTag{Name: t.Name, Operations: ops})
			delete(byTag, t.Name)
		}
	}
	rest := make([]string, 0, len(byTag))
	for name := range byTag {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		out = append(out, docsTag{Name: name, Operations: byTag[name]})
	}
	return out
}

func docsOperationOf(method, path string, op *openapi3.Operation) docsOperation {
	d := docsOperation{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: op.Description}
	for _, p := range op.Parameters {
		if p.Value == nil {
			continue
		}
		d.Parameters = append(d.Parameters, docsField{Name: p.Value.Name, In: p.Value.In, Description: p.Value.Description, Required: p.Value.Required, Type: typeOf(p.Value.Schema)})
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		d.Body, d.BodyRequired = contentType(rb.Value.Content), rb.Value.Required
	}
	if op.Responses != nil {
		for _, status := range op.Responses.Keys() {
			r := op.Responses.Value(status)
			if r == nil || r.Value == nil {
				continue
			}
			resp := docsResponse{Status: status, Type: contentType(r.Value.Content)}
			if r.Value.Description != nil {
				resp.Description = *r.Value.Description
			}
			d.Responses = append(d.Responses, resp)
		}
	}
	return d
}

// contentType names the schema of a body: the JSON one, else the first
// media type's.
func contentType(c openapi3.Content) docsType {
	if mt := c.Get(echo.MIMEApplicationJSON); mt != nil {
		return typeOf(mt.Schema)
	}
	if names := sortedKeys(c); len(names) > 0 {
		return docsType{Text: names[0]}
	}
	return docsType{}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// typeOf names a schema for the reader.
func typeOf(ref *openapi3.SchemaRef) docsType {
	if ref == nil {
		return docsType{}
	}
	if name, ok := strings.CutPrefix(ref.Ref, "#/components/schemas/"); ok {
		return docsType{Text: name, Anchor: name}
	}
	s := ref.Value
	if s == nil {
		return docsType{Text: ref.Ref}
	}
	if s.Type.Is(openapi3.TypeArray) {
		item := typeOf(s.Items)
		return docsType{Text: "array of " + orAny(item.Text), Anchor: item.Anchor}
	}
	for _, alt := range []struct {
		word string
		refs openapi3.SchemaRefs
	}{{"one of", s.OneOf}, {"any of", s.AnyOf}, {"all of", s.AllOf}} {
		if len(alt.refs) > 0 {
			names := make([]string, len(alt.refs))
			for i, r := range alt.refs {
				names[i] = orAny(typeOf(r).Text)
			}
			return docsType{Text: alt.word + " " + strings.Join(names, ", ")}
		}
	}
	text := strings.Join(s.Type.Slice(), " or ")
	if s.Format != "" {
		text += " (" + s.Format + ")"
	}
	return docsType{Text: orAny(text)}
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

// docsSchemas lists the component schemas with their properties.
func docsSchemas(doc *openapi3.T) []docsSchema {
	var out []docsSchema
	for _, name := range sortedKeys(doc.Components.Schemas) {
		s := doc.Components.Schemas[name].Value
		if s == nil {
			continue
		}
		d := docsSchema{Name: name, Description: s.Description}
		// The schema's own type, without the ref that names it.
		d.Type = typeOf(&openapi3.SchemaRef{Value: s})
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		for _, prop := range sortedKeys(s.Properties) {
			p := s.Properties[prop]
			desc := ""
			if p.Value != nil {
				desc = p.Value.Description
			}
			d.Properties = append(d.Properties, docsField{Name: prop, Description: desc, Required: required[prop], Type: typeOf(p)})
		}
		out = append(out, d)
	}
	return out
}

var docsTemplate = template.Must(template.New("docs").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	// slug makes a tag name usable as an element id (no spaces).
	"slug": func(s string) string { return strings.ReplaceAll(s, " ", "-") },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} {{.Version}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<header>
<h1>{{.Title}} <small>{{.Version}}</small></h1>
<p class="desc">{{.Description}}</p>
<p>The machine-readable contract is <a href="openapi.json">openapi.json</a> (OpenAPI 3).</p>
</header>
<nav>
<h2>Contents</h2>
<ul>
{{- range .Tags}}
<li><a href="#tag-{{slug .Name}}">{{.Name}}</a>
<ul>{{range .Operations}}<li><a href="#op-{{.ID}}"><span class="m {{lower .Method}}">{{.Method}}</span> {{.Path}}</a></li>{{end}}</ul></li>
{{- end}}
<li><a href="#schemas">Schemas</a></li>
</ul>
</nav>
<main>
{{- range .Tags}}
<section id="tag-{{slug .Name}}">
<h2>{{.Name}}</h2>
{{- range .Operations}}
<article id="op-{{.ID}}">
<h3><span class="m {{lower .Method}}">{{.Method}}</span> <code>{{.Path}}</code></h3>
{{if .Summary}}<p class="summary">{{.Summary}}</p>{{end}}
{{if .Description}}<p class="desc">{{.Description}}</p>{{end}}
{{- if .Parameters}}
<h4>Parameters</h4>
<table><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr>
{{- range .Parameters}}
<tr><td><code>{{.Name}}</code>{{if .Required}} <span class="req">required</span>{{end}}</td><td>{{.In}}</td><td>{{template "type" .Type}}</td><td>{{.Description}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- if .Body.Text}}
<h4>Request body</h4>
<p>{{template "type" .Body}}{{if .BodyRequired}} <span class="req">required</span>{{end}}</p>
{{- end}}
<h4>Responses</h4>
<table><tr><th>Status</th><th>Body</th><th>Description</th></tr>
{{- range .Responses}}
<tr><td>{{.Status}}</td><td>{{template "type" .Type}}</td><td>{{.Description}}</td></tr>
{{- end}}
</table>
</article>
{{- end}}
</section>
{{- end}}
<section id="schemas">
<h2>Schemas</h2>
{{- range .Schemas}}
<article id="schema-{{.Name}}">
<h3>{{.Name}} <small>{{.Type.Text}}</small></h3>
{{if .Description}}<p class="desc">{{.Description}}</p>{{end}}
{{- if .Properties}}
<table><tr><th>Property</th><th>Type</th><th>Description</th></tr>
{{- range .Properties}}
<tr><td><code>{{.Name}}</code>{{if .Required}} <span class="req">required</span>{{end}}</td><td>{{template "type" .Type}}</td><td>{{.Description}}</td></tr>
{{- end}}
</table>
{{- end}}
</article>
{{- end}}
</section>
</main>
</body>
</html>
{{define "type"}}{{if .Anchor}}<a href="#schema-{{.Anchor}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{end}}`))
