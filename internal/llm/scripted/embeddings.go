package scripted

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// DefaultEmbeddingDims is the length of the vectors /v1/embeddings returns
// when the request does not ask for dimensions.
const DefaultEmbeddingDims = 64

// embeddingRequest is the part of an embeddings request the server reads:
// input is one string or a list of strings.
type embeddingRequest struct {
	Input      json.RawMessage `json:"input"`
	Model      string          `json:"model"`
	Dimensions int             `json:"dimensions"`
}

// handleEmbeddings answers POST /v1/embeddings with Embed of each input.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad embeddings request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var inputs []string
	if err := json.Unmarshal(req.Input, &inputs); err != nil {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			http.Error(w, "input must be a string or a list of strings", http.StatusBadRequest)
			return
		}
		inputs = []string{one}
	}
	dims := req.Dimensions
	if dims <= 0 {
		dims = DefaultEmbeddingDims
	}
	data := make([]map[string]any, len(inputs))
	tokens := 0
	for i, in := range inputs {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Embed(in, dims)}
		tokens += len(words(in))
	}
	model := req.Model
	if model == "" {
		model = "scripted-embedding"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

// Embed is the deterministic embedding the server answers: a bag of
// words, each lower-cased word adding 1 to the dimension its FNV-1a hash
// picks, scaled to unit length. Texts sharing words are close (cosine
// similarity is the share of common words); a text without words is the
// zero vector.
func Embed(text string, dims int) []float32 {
	v := make([]float64, dims)
	for _, w := range words(text) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
