package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
)

// PutEncoded stores a value as it was sent and reads it back like a value
// Put stored; what cannot be stored as sent is decoded or refused as Put
// refuses it.
func TestPutEncoded(t *testing.T) {
	s, _, _ := newTest(t)
	ctx := context.Background()
	for name, c := range map[string]struct {
		raw  string
		want map[string]any
	}{
		"spaces and escapes kept": {` { "b" : [1, "x\"y"], "a": {"html": "<&>"} } `, map[string]any{"a": map[string]any{"html": "<&>"}, "b": []any{1.0, `x"y`}}},
		"invalid UTF-8 decoded":   {"{\"s\":\"\xff\"}", map[string]any{"s": "\ufffd"}},
		"empty object":            {`{}`, map[string]any{}},
	} {
		if err := s.PutEncoded(ctx, []string{"enc"}, name, json.RawMessage(c.raw), nil, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := mustGet(t, s, []string{"enc"}, name, false); !reflect.DeepEqual(got.Value, c.want) {
			t.Errorf("%s: read back %#v, want %#v", name, got.Value, c.want)
		}
	}
	for _, raw := range []string{`[1]`, `null`, `"s"`, `3`} {
		if err := s.PutEncoded(ctx, []string{"enc"}, "bad", json.RawMessage(raw), nil, nil); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("PutEncoded(%s) = %v, want ErrInvalid", raw, err)
		}
	}
	if it := mustGet(t, s, []string{"enc"}, "bad", false); it != nil {
		t.Fatalf("a refused value was stored: %v", it)
	}
}

// Under auth rules the value is decoded, so the caller's filter applies to
// it as it does to Put's.
func TestPutEncodedUnderAuthRules(t *testing.T) {
	s, _, _ := newTest(t)
	alice := authz.WithCaller(context.Background(), authz.Caller{User: &authz.User{Identity: "alice", Fields: map[string]any{"team": "red"}}, Authorizer: teamHandler{}})
	if err := s.PutEncoded(alice, []string{"alice"}, "red", json.RawMessage(`{"team":"red"}`), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEncoded(alice, []string{"alice"}, "blue", json.RawMessage(`{"team":"blue"}`), nil, nil); !errors.Is(err, errdefs.ErrForbidden) {
		t.Fatalf("a value outside alice's filter: %v, want ErrForbidden", err)
	}
}
