package httpapi

import (
	"net/http"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// dropEmptyOptionalQuery removes the empty values of a route's optional
// query parameters from r, so that "?stream_mode=&limit=" reads as if those
// parameters were absent: the Python SDK sends a parameter it has no value
// for as an empty one, and an absent optional parameter means its default.
// Empty values of required or undeclared parameters are left for validation
// and the handlers to judge.
func dropEmptyOptionalQuery(r *http.Request, route *routers.Route) {
	if r.URL.RawQuery == "" {
		return
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return // malformed: validation reports it
	}
	changed := false
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, ref := range params {
			p := ref.Value
			if p == nil || p.In != openapi3.ParameterInQuery || p.Required {
				continue
			}
			if values, ok := query[p.Name]; ok {
				kept := withoutEmpty(values)
				if len(kept) == len(values) {
					continue
				}
				changed = true
				if len(kept) == 0 {
					delete(query, p.Name)
				} else {
					query[p.Name] = kept
				}
			}
		}
	}
	if changed {
		r.URL.RawQuery = query.Encode()
	}
}

// withoutEmpty returns the values that are not the empty string.
func withoutEmpty(values []string) []string {
	kept := values[:0:0]
	for _, v := range values {
		if v != "" {
			kept = append(kept, v)
		}
	}
	return kept
}
