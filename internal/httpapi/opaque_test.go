package httpapi

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"agentserver/api"
)

func TestOpaqueFieldsOfStorePut(t *testing.T) {
	doc, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	v, err := newRequestValidator(doc)
	if err != nil {
		t.Fatal(err)
	}
	route, _, err := v.router.FindRoute(httptest.NewRequest("PUT", "/store/items", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.opaque.of(route); !slices.Equal(got, []string{"value"}) {
		t.Fatalf("opaque fields of PUT /store/items = %v, want [value]", got)
	}
	light, ok := v.opaque.lighten(route, []byte(`{"namespace":["a"], "key":"k", "value": {"big": "..."}}`))
	if !ok || string(light) != `{"namespace":["a"],"key":"k","value":{}}` {
		t.Fatalf("lighten = %s, %v", light, ok)
	}
	if _, ok := v.opaque.lighten(route, []byte(`{"namespace":["a"],"key":"k","value":[1]}`)); ok {
		t.Fatal("a value that is not an object was replaced")
	}
}

func TestAcceptsAnyObject(t *testing.T) {
	str := openapi3.NewStringSchema()
	for _, c := range []struct {
		schema *openapi3.Schema
		want   bool
	}{
		{openapi3.NewObjectSchema(), true},
		{openapi3.NewObjectSchema().WithAnyAdditionalProperties(), true},
		{&openapi3.Schema{Type: &openapi3.Types{"object"}, Description: "anything", Nullable: true, Extensions: map[string]any{"x-go-type": "json.RawMessage"}}, true},
		{openapi3.NewObjectSchema().WithProperty("a", str), false},
		{openapi3.NewObjectSchema().WithAdditionalProperties(str), false},
		{openapi3.NewObjectSchema().WithMaxProperties(3), false},
		{&openapi3.Schema{Type: &openapi3.Types{"object"}, ReadOnly: true}, false},
		{openapi3.NewArraySchema(), false},
		{str, false},
		{nil, false},
	} {
		if got := acceptsAnyObject(c.schema); got != c.want {
			t.Errorf("acceptsAnyObject(%+v) = %v, want %v", c.schema, got, c.want)
		}
	}
}
