package config

import (
	"fmt"
	"strings"
)

// StoreIndex is the store.index section of langgraph.json: how store
// items are embedded for semantic search. The zero value (no section)
// means no semantic search.
type StoreIndex struct {
	// Dims is the length of every vector.
	Dims int
	// Model is the embedding model, from embed "openai:<model>"; it is
	// called through the OpenAI-compatible /v1/embeddings of the model
	// endpoint (OPENAI_BASE_URL, OPENAI_API_KEY).
	Model string
	// Fields are the paths of the value embedded by default; ["$"] (the
	// whole value) when absent.
	Fields []string
}

// Enabled reports whether the section was given.
func (s StoreIndex) Enabled() bool { return s.Model != "" }

// storeIndexFile is the part of langgraph.json StoreIndex comes from.
type storeIndexFile struct {
	Store *struct {
		Index *struct {
			Dims   int      `json:"dims"`
			Embed  any      `json:"embed"`
			Fields []string `json:"fields"`
		} `json:"index"`
	} `json:"store"`
}

// LoadStoreIndex reads and checks the store.index section of the
// langgraph.json at path.
func LoadStoreIndex(path string) (StoreIndex, error) {
	var out StoreIndex
	var f storeIndexFile
	if err := readSections(path, &f, "", "store"); err != nil {
		return out, err
	}
	if f.Store == nil || f.Store.Index == nil {
		return out, nil
	}
	ix := f.Store.Index
	embed, _ := ix.Embed.(string)
	model, ok := strings.CutPrefix(embed, "openai:")
	if !ok || model == "" {
		return out, fmt.Errorf("%s: store.index.embed must be \"openai:<model>\" (an OpenAI-compatible /v1/embeddings model), got %v", path, ix.Embed)
	}
	if ix.Dims < 1 {
		return out, fmt.Errorf("%s: store.index.dims must be a positive number of dimensions, got %d", path, ix.Dims)
	}
	out = StoreIndex{Dims: ix.Dims, Model: model, Fields: ix.Fields}
	if len(out.Fields) == 0 {
		out.Fields = []string{"$"}
	}
	for _, p := range out.Fields {
		if p == "" {
			return out, fmt.Errorf("%s: store.index.fields: a field path must not be empty", path)
		}
	}
	return out, nil
}
