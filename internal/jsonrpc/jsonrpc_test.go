package jsonrpc

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for raw, want := range map[string]bool{
		`"a"`: true, `1`: true, `-7`: true, `null`: true, `12345678901234`: true,
		`{"a":1}`: false, `[1]`: false, `true`: false, `1.5`: false, `1e400`: false, ``: false,
	} {
		if got := ValidID(json.RawMessage(raw)); got != want {
			t.Errorf("ValidID(%s) = %v, want %v", raw, got, want)
		}
	}
}

func TestCheckBatch(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"m"}`
	batch := func(n int) []byte { return []byte(" [" + strings.TrimSuffix(strings.Repeat(call+",", n), ",") + "]") }
	if err := CheckBatch(batch(MaxBatch)); err != nil {
		t.Fatalf("a batch at the bound: %v", err)
	}
	err := CheckBatch(batch(MaxBatch + 1))
	if err == nil || err.Code != CodeInvalidRequest || !strings.Contains(err.Message, fmt.Sprint(MaxBatch)) {
		t.Fatalf("a batch over the bound: %v", err)
	}
	if err := CheckBatch([]byte(call)); err != nil {
		t.Fatalf("a single call: %v", err)
	}
}

// TestResponseBound encodes an answer over MaxAnswerBytes: it becomes an
// error that names the bound, with the request's id.
func TestResponseBound(t *testing.T) {
	big := strings.Repeat("x", MaxAnswerBytes)
	var out struct {
		ID    int    `json:"id"`
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(Response(json.RawMessage("7"), big, nil), &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != 7 || out.Error == nil || out.Error.Code != CodeInternal || !strings.Contains(out.Error.Message, fmt.Sprint(MaxAnswerBytes)) {
		t.Fatalf("answer over the bound = %+v", out)
	}
	if raw := Response(nil, "small", nil); string(raw) != `{"jsonrpc":"2.0","id":null,"result":"small"}` {
		t.Fatalf("small answer = %s", raw)
	}
}

// TestBoundAnswers serves, over real HTTP, a JSON answer over the bound,
// one under it, a streamed one over it, and a status without a body.
func TestBoundAnswers(t *testing.T) {
	big := strings.Repeat("x", MaxAnswerBytes+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := BoundAnswers(w)
		defer bw.End()
		switch r.URL.Path {
		case "/json-big":
			bw.Header().Set("Content-Type", "application/json")
			bw.Write([]byte(big))
		case "/json-small":
			bw.Header().Set("Content-Type", "application/json")
			bw.WriteHeader(http.StatusCreated)
			bw.Write([]byte(`{"ok":true}`))
		case "/stream-big":
			bw.Header().Set("Content-Type", "text/event-stream")
			bw.Flush()
			bw.Write([]byte(big))
		case "/accepted":
			bw.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	if status, body := get("/json-big"); status != 200 || !strings.Contains(body, `"code":-32603`) || len(body) > 1024 {
		t.Fatalf("big JSON answer: %d %.200s", status, body)
	}
	if status, body := get("/json-small"); status != http.StatusCreated || body != `{"ok":true}` {
		t.Fatalf("small JSON answer: %d %s", status, body)
	}
	if status, body := get("/stream-big"); status != 200 || len(body) != len(big) {
		t.Fatalf("stream: %d, %d bytes", status, len(body))
	}
	if status, _ := get("/accepted"); status != http.StatusAccepted {
		t.Fatalf("status without a body: %d", status)
	}
}
