package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// fuzzRoutes are the JSON-body routes whose decoding the fuzzer drives.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/threads"},
	{"POST", "/threads/search"},
	{"POST", "/threads/count"},
	{"POST", "/assistants"},
	{"POST", "/assistants/search"},
	{"PUT", "/store/items"},
	{"POST", "/store/items/search"},
	{"POST", "/store/namespaces"},
	{"POST", "/runs/search"},
}

// FuzzRequestDecoding sends arbitrary bodies to every JSON route and checks
// that the server never answers 5xx (the JS SDK retries those) and always
// answers JSON.
func FuzzRequestDecoding(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"metadata":{"a":1}}`, `{"limit":0}`, `{"limit":-1,"offset":"x"}`, `{"thread_id":"not-a-uuid"}`,
		`{"namespace":["a"],"key":"k","value":{"x":[1,2,{"y":null}]}}`, `{"supersteps":[{"updates":[{"as_node":"x","values":1}]}]}`,
		`[1,2,3]`, `"str"`, `null`, `{"metadata":`, "\x00\xff", `{"sort_by":"status","select":["values"]}`,
		`{"graph_id":"echo","config":{"configurable":[]}}`, `{"ids":["00000000-0000-7000-8000-000000000000"]}`,
	} {
		for i := range fuzzRoutes {
			f.Add(i, seed)
		}
	}
	srv := testutil.Build(f, testutil.Options{NoSync: true})
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, route int, body string) {
		if route < 0 {
			route = -route
		}
		r := fuzzRoutes[route%len(fuzzRoutes)]
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: status %d: %s", r.method, r.path, body, rec.Code, rec.Body.String())
		}
		if rec.Code != http.StatusNoContent && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s %q: body is not JSON: %q", r.method, r.path, body, rec.Body.String())
		}
	})
}
