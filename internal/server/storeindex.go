package server

import (
	"context"
	"log/slog"

	"agentserver/internal/config"
	"agentserver/internal/llm"
	"agentserver/internal/store"
)

// embedder embeds store texts with one model of the OpenAI-compatible
// endpoint the agents use (OPENAI_BASE_URL, OPENAI_API_KEY).
type embedder struct {
	client *llm.OpenAI
	model  string
}

// Embed implements store.Embedder.
func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.client.Embed(ctx, e.model, texts)
}

// configureStoreIndex turns semantic search on when langgraph.json has a
// store.index section.
func configureStoreIndex(s *store.Service, path string, log *slog.Logger) error {
	ix, err := config.LoadStoreIndex(path)
	if err != nil || !ix.Enabled() {
		return err
	}
	cfg := llm.FromEnv(nil, llm.Config{})
	if err := cfg.Validate(); err != nil {
		return err
	}
	if !cfg.Configured() {
		log.Warn("store.index is set but no model endpoint is: embeddings go to the default OpenAI URL without a key", "hint", "set OPENAI_BASE_URL and OPENAI_API_KEY")
	}
	s.ConfigureIndex(store.IndexConfig{Dims: ix.Dims, Fields: ix.Fields, Embedder: embedder{client: llm.NewOpenAI(cfg, log), model: ix.Model}})
	log.Info("store semantic search on", "model", ix.Model, "dims", ix.Dims, "fields", ix.Fields)
	return nil
}
