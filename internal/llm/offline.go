package llm

import (
	"context"
	"strings"

	"github.com/google/uuid"
)

// OfflineModelName is the model name the Offline model reports.
const OfflineModelName = "offline"

// Offline is the Model used when no provider is configured. It makes no
// network calls and never calls tools: it answers with a message saying that
// no model is configured and quoting the last message, streamed in up to
// four chunks. Content, chunks and usage (a word count) depend only on the
// request; the message id is fresh per call, like a real model's.
type Offline struct{}

var _ Model = Offline{}

const offlineQuoteLimit = 200 // runes of the last message quoted

// Generate implements Model.
func (m Offline) Generate(ctx context.Context, req Request, onChunk ChunkFunc) (Response, error) {
	return observed(ctx, OfflineModelName, func(ctx context.Context) (Response, error) { return m.generate(ctx, req, onChunk) })
}

func (Offline) generate(ctx context.Context, req Request, onChunk ChunkFunc) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, canceled(ctx)
	}
	last := "(none)"
	if n := len(req.Messages); n > 0 {
		last = strings.Join(strings.Fields(MessageText(req.Messages[n-1])), " ")
		if r := []rune(last); len(r) > offlineQuoteLimit {
			last = string(r[:offlineQuoteLimit]) + "…"
		}
		if last == "" {
			last = "(empty)"
		}
	}
	text := "[offline] No model is configured (set OPENAI_API_KEY or OPENAI_BASE_URL). Last message: " + last

	input := 0
	for _, m := range req.Messages {
		input += len(strings.Fields(MessageText(m)))
	}
	output := len(strings.Fields(text))
	usage := Usage{InputTokens: input, OutputTokens: output, TotalTokens: input + output}

	id := "run-" + uuid.NewString()
	acc := accumulator{id: id, model: OfflineModelName, finish: "stop", usage: &usage}
	acc.content.WriteString(text)
	if onChunk != nil {
		pieces := offlinePieces(text, 4)
		for i, p := range pieces {
			if err := ctx.Err(); err != nil {
				return Response{}, canceled(ctx)
			}
			chunk := Message{
				"type": "AIMessageChunk", "id": id, "content": p,
				"tool_call_chunks": []any{}, "tool_calls": []any{}, "invalid_tool_calls": []any{},
				"additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
			}
			if i == len(pieces)-1 {
				chunk["usage_metadata"] = usage.metadata()
				chunk["response_metadata"] = acc.responseMetadata()
			}
			onChunk(chunk)
		}
	}
	return acc.response(), nil
}

// offlinePieces splits text at word boundaries into at most n pieces whose
// concatenation is text.
func offlinePieces(text string, n int) []string {
	words := strings.SplitAfter(text, " ")
	per := (len(words) + n - 1) / n
	out := make([]string, 0, n)
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}
