package llm

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// Embed returns one vector per text from the OpenAI-compatible
// /v1/embeddings endpoint, with model. The vectors come back in the order
// of texts.
func (o *OpenAI) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if o.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.cfg.Timeout)
		defer cancel()
	}
	resp, err := o.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: texts, Model: openai.EmbeddingModel(model)})
	if err != nil {
		return nil, fmt.Errorf("llm: embeddings with %s: %w", model, err)
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("llm: embeddings with %s: %d vectors for %d texts", model, len(resp.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("llm: embeddings with %s: bad or repeated index %d", model, d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}
