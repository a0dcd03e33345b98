package storage

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A run record written by the release that stored kwargs as a free-form
// map decodes into RunOptions, and clients see the same kwargs as before.
func TestRunOptionsReadRecordsOfTheMapRelease(t *testing.T) {
	kwargs := `{"input":{"messages":[{"role":"user","content":"hi"}]},"command":null,` +
		`"config":{"configurable":{"thread_id":"t","run_id":"r"},"recursion_limit":5},"context":{"user":"jane"},` +
		`"stream_mode":["values","messages-tuple"],"subgraphs":true,"resumable":false,` +
		`"interrupt_before":["tools"],"interrupt_after":[],"webhook":null,"feedback_keys":[],"temporary":false,` +
		`"checkpoint_id":"0190b7a2-1c1e-7c55-9a3c-0d5e3f1a2b3c"}`
	raw := []byte(`{"run_id":"0190b7a2-1c1e-7c55-9a3c-0d5e3f1a2b3d","status":"pending","kwargs":` + kwargs + `}`)
	var r Run
	if err := decode(raw, &r); err != nil {
		t.Fatalf("decode: %v", err)
	}
	o := r.Kwargs
	if !o.Subgraphs || o.Resumable || o.Webhook != "" || o.Command != nil || !reflect.DeepEqual(o.StreamModes, []string{"values", "messages-tuple"}) ||
		!reflect.DeepEqual(o.InterruptBefore, []string{"tools"}) || o.CheckpointID != "0190b7a2-1c1e-7c55-9a3c-0d5e3f1a2b3c" || o.Context["user"] != "jane" {
		t.Fatalf("options = %+v", o)
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(kwargs), &want); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(o.Map())
	if err != nil {
		t.Fatal(err)
	}
	var gotMap map[string]any
	if err := json.Unmarshal(got, &gotMap); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotMap, want) {
		t.Fatalf("kwargs as clients see them:\n got %s\nwant %s", got, kwargs)
	}
}

// Options without a command, webhook or checkpoint show them as clients of
// LangGraph Platform expect: null, null and absent; lists are never null.
func TestRunOptionsMapDefaults(t *testing.T) {
	m := RunOptions{}.Map()
	if m["command"] != nil || m["webhook"] != nil {
		t.Fatalf("command/webhook = %v/%v, want null", m["command"], m["webhook"])
	}
	if _, ok := m["checkpoint_id"]; ok {
		t.Fatal("checkpoint_id present without a checkpoint")
	}
	for _, k := range []string{"stream_mode", "interrupt_before", "interrupt_after", "feedback_keys"} {
		if l, ok := m[k].([]string); !ok || l == nil {
			t.Fatalf("%s = %#v, want []", k, m[k])
		}
	}
}
