package graphs

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// describeFile is a resolver whose graphs are described by their file's
// content; a file saying "bad" does not compile.
func describeFile(id, path string) (*Definition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if string(raw) == "bad" {
		return nil, errors.New("field \"x\": bad")
	}
	d := Echo()
	d.Description = string(raw)
	return d, nil
}

func TestReloaderReplacesChangedSpecGraphsOnly(t *testing.T) {
	dir := t.TempDir()
	spec := write(t, dir, "a.txt", "first")
	conf := write(t, dir, "langgraph.json", `{"graphs":{"a":"./a.txt","echo":"builtin:echo"}}`)
	reg, err := Load(conf, describeFile)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	w := NewReloader(reg, describeFile, slog.New(slog.NewTextHandler(&logs, nil)))
	echo, _ := reg.Get("echo")
	old, _ := reg.Get("a")

	w.ReloadChanged()
	if d, _ := reg.Get("a"); d != old {
		t.Fatal("an unchanged file was reloaded")
	}
	write(t, dir, "a.txt", "second!")
	w.ReloadChanged()
	d, _ := reg.Get("a")
	if d.Description != "second!" || d.ID != "a" || d.Source != "./a.txt" || d.File != spec {
		t.Fatalf("reloaded definition = %+v", d)
	}
	if old.Description != "first" {
		t.Fatal("the old definition was modified")
	}

	write(t, dir, "a.txt", "bad")
	w.ReloadChanged()
	w.ReloadChanged()
	if d2, _ := reg.Get("a"); d2 != d {
		t.Fatal("a bad edit replaced the definition")
	}
	if n := strings.Count(logs.String(), "agent spec not reloaded"); n != 1 {
		t.Fatalf("bad edit logged %d times:\n%s", n, logs.String())
	}

	w.ReloadAll()
	if d3, _ := reg.Get("echo"); d3 != echo {
		t.Fatal("a built-in graph was replaced")
	}

	write(t, dir, "langgraph.json", `{"graphs":{"a":"./a.txt","b":"builtin:echo"}}`)
	w.ReloadChanged()
	w.ReloadChanged()
	if n := strings.Count(logs.String(), "restart the server"); n != 1 {
		t.Fatalf("langgraph.json change warned %d times:\n%s", n, logs.String())
	}
	if ids := reg.IDs(); len(ids) != 2 || ids[1] != "echo" {
		t.Fatalf("the set of graphs changed without a restart: %v", ids)
	}
}
