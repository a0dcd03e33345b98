package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

// membersDocs are JSON objects whose members ObjectMembers must find as
// encoding/json decodes them.
var membersDocs = []string{
	`{}`,
	` { } `,
	`{"a":1}`,
	"{\n\t\"a\" :\r\n 1 , \"b\": [1, {\"c\": \"]}\"}] }",
	`{"q":"say \"hi\"","b":"ends with a backslash \\","n":null,"t":true,"f":false}`,
	`{"\u0076alue":{"x":"{[\"]}"},"num":-1.5e+3,"arr":[[],[{}],"\\\""]}`,
	`{"nested":{"deep":{"deeper":[1,2,{"s":"}}}}"}]}},"after":"x"}`,
	`{"dup":1,"dup":2}`,
	`{"unicode":"héllo ✓","esc":"\t\n\u00e9"}`,
}

func TestObjectMembersMatchEncodingJSON(t *testing.T) {
	for _, doc := range membersDocs {
		checkMembers(t, []byte(doc))
	}
}

func TestObjectMembersRefusesNonObjects(t *testing.T) {
	for _, doc := range []string{``, `[]`, `"s"`, `1`, `null`, ` [{"a":1}]`} {
		if _, ok := ObjectMembers([]byte(doc)); ok {
			t.Errorf("ObjectMembers(%q) reported an object", doc)
		}
	}
}

func TestReplaceMembers(t *testing.T) {
	members, ok := ObjectMembers([]byte(`{"a": {"big": [1,2,3]}, "b" : "keep", "a": 2}`))
	if !ok {
		t.Fatal("not an object")
	}
	got := ReplaceMembers(members, func(m Member) bool { return m.Name() == "a" }, "{}")
	if want := `{"a":{},"b":"keep","a":{}}`; string(got) != want {
		t.Fatalf("ReplaceMembers = %s, want %s", got, want)
	}
}

// FuzzObjectMembers checks ObjectMembers against encoding/json on every
// valid JSON object the fuzzer finds.
func FuzzObjectMembers(f *testing.F) {
	for _, doc := range membersDocs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || bytes.TrimSpace(data)[0] != '{' {
			return
		}
		checkMembers(t, data)
	})
}

// checkMembers fails t unless ObjectMembers splits doc into the members
// encoding/json finds, in order: the same names and the same values.
func checkMembers(t *testing.T, doc []byte) {
	t.Helper()
	members, ok := ObjectMembers(doc)
	if !ok {
		t.Fatalf("%s: not split", doc)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for i := 0; dec.More(); i++ {
		key, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatal(err)
		}
		if i >= len(members) {
			t.Fatalf("%s: %d members found, encoding/json has more", doc, len(members))
		}
		if members[i].Name() != key {
			t.Fatalf("%s: member %d is %q, want %q", doc, i, members[i].Name(), key)
		}
		if !bytes.Equal(members[i].Value, value) {
			t.Fatalf("%s: member %q is %s, want %s", doc, key, members[i].Value, value)
		}
	}
}
