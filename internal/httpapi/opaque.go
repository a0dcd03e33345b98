package httpapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"agentserver/internal/jsonx"
)

// opaqueFields lightens large request bodies before the request validator
// decodes them. A top-level field whose schema accepts any JSON object (a
// store item's value, a run's input) says nothing about what is inside it,
// so checking the body with such a field's object replaced by {} gives the
// same answer as checking the body itself, without decoding megabytes of
// it into Go maps. The handler still receives the body as it was sent.
type opaqueFields struct {
	byRoute sync.Map // *routers.Route -> []string
}

// lighten returns body with the object of each of route's opaque fields
// replaced by {}, and whether it changed anything. body is valid JSON
// (bodyGuard checked it); one that is not an object is left as it is.
func (o *opaqueFields) lighten(route *routers.Route, body []byte) ([]byte, bool) {
	if len(body) == 0 {
		return nil, false
	}
	fields := o.of(route)
	if len(fields) == 0 {
		return nil, false
	}
	members, ok := jsonx.ObjectMembers(body)
	if !ok {
		return nil, false
	}
	changed := false
	light := jsonx.ReplaceMembers(members, func(m jsonx.Member) bool {
		opaque := len(m.Value) > 2 && m.Value[0] == '{' && slices.Contains(fields, m.Name())
		changed = changed || opaque
		return opaque
	}, "{}")
	return light, changed
}

// of returns the names of the top-level fields of route's JSON request
// body whose schema accepts any object, computed once per route.
func (o *opaqueFields) of(route *routers.Route) []string {
	if cached, ok := o.byRoute.Load(route); ok {
		return cached.([]string)
	}
	var fields []string
	if op := route.Operation; op != nil && op.RequestBody != nil && op.RequestBody.Value != nil {
		if media := op.RequestBody.Value.Content.Get("application/json"); media != nil && media.Schema != nil && media.Schema.Value != nil {
			for name, prop := range media.Schema.Value.Properties {
				if prop != nil && acceptsAnyObject(prop.Value) {
					fields = append(fields, name)
				}
			}
		}
	}
	o.byRoute.Store(route, fields)
	return fields
}

// acceptsAnyObject reports whether s accepts every JSON object: its only
// constraint is `type: object` (additionalProperties true or absent);
// annotations (description, nullable, examples, extensions) do not count.
// Anything else (properties, required fields, sizes, compositions) makes
// the object's content matter, and the field is not opaque.
func acceptsAnyObject(s *openapi3.Schema) bool {
	if s == nil {
		return false
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return false
	}
	var constraints map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&constraints); err != nil {
		return false
	}
	for key, v := range constraints {
		switch {
		case strings.HasPrefix(key, "x-"), key == "description", key == "title", key == "nullable",
			key == "example", key == "examples", key == "deprecated":
			delete(constraints, key)
		case key == "additionalProperties" && v == true:
			delete(constraints, key)
		}
	}
	return len(constraints) == 1 && constraints["type"] == "object"
}

// checkedBodySerializer is echo's JSON serializer, except that a large
// body the edge already found to be valid JSON is handed straight to a
// request type that decodes itself (api.StorePutRequest keeps its value as
// the span it occupies): encoding/json would first scan all of it again.
// Should that decoding fail, the body is decoded the usual way, whose error
// is the answer.
type checkedBodySerializer struct {
	echo.DefaultJSONSerializer
}

// Deserialize decodes the request body of c into i.
func (s checkedBodySerializer) Deserialize(c echo.Context, i any) error {
	if body, ok := c.Get(largeBodyKey).([]byte); ok {
		if u, ok := i.(json.Unmarshaler); ok && u.UnmarshalJSON(body) == nil {
			return nil
		}
	}
	return s.DefaultJSONSerializer.Deserialize(c, i)
}
