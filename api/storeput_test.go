package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestStorePutRequestDecodesAsEncodingJSON checks that the store PUT body's
// own decoder gives what encoding/json gives without it, member names
// matched the same way, the value kept byte for byte.
func TestStorePutRequestDecodesAsEncodingJSON(t *testing.T) {
	type plain StorePutRequest
	for _, body := range []string{
		`{"namespace":["a","b"],"key":"k","value":{"x":[1,"}"]},"index":false,"ttl":5}`,
		`{"value": {"nested": {"s": "say \"hi\""}} , "key":"k","namespace":["n"]}`,
		`{"namespace":["n"],"key":"k","Value":{"a":1},"value":{"b":2}}`,
		`{"namespace":["n"],"key":"k","value":{"b":2},"VALUE":{"c":3}}`,
		`{"namespace":["n"],"key":"k","value":null}`,
		`{"namespace":["n"],"key":"k"}`,
		`{"namespace":["n"],"key":"k","index":["a.b"],"value":{}}`,
	} {
		var got StorePutRequest
		if err := got.UnmarshalJSON([]byte(body)); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var want plain
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		gotValue, wantValue := got.Value, want.Value
		got.Value, want.Value = nil, nil
		if !reflect.DeepEqual(plain(got), want) {
			t.Errorf("%s: decoded %+v, want %+v", body, got, want)
		}
		if !bytes.Equal(gotValue, wantValue) && !(string(wantValue) == "null" && gotValue == nil) {
			t.Errorf("%s: value %s, want %s", body, gotValue, wantValue)
		}
	}
}

func TestStorePutRequestRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, body := range []string{`[]`, `"s"`, `{"namespace":"not a list","key":"k","value":{}}`, `{"key":1,"value":{}}`} {
		var got StorePutRequest
		if err := json.Unmarshal([]byte(body), &got); err == nil {
			t.Errorf("%s: decoded without an error: %+v", body, got)
		}
	}
}
