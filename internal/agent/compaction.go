package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"agentserver/internal/channels"
	"agentserver/internal/llm"
)

// defaultKeepMessages is how many recent messages compaction keeps verbatim
// when the spec does not say.
const defaultKeepMessages = 6

const defaultSummaryPrompt = "Summarise the conversation below for your own later use. Keep every fact, " +
	"decision, open question, identifier (file names, task ids, URLs) and result that the rest of the work " +
	"may need; drop chit-chat. Answer with the summary only."

// SummaryMarker tags the message that replaced compacted history.
const SummaryMarker = "compaction_summary"

// compaction replaces older messages by one summary written by the model
// when the estimated size of the conversation passes a threshold. It only
// rewrites the messages channel: every other channel is left as it is.
type compaction struct {
	cfg    Compaction
	models ModelFactory
	model  Model
}

func (c *compaction) Name() string { return "compaction" }

// BeforeModel summarises old messages when the conversation is too long.
func (c *compaction) BeforeModel(ctx context.Context, call *ModelCall) error {
	if estimateTokens(call.Messages) <= c.cfg.MaxTokens {
		return nil
	}
	keep := c.cfg.KeepMessages
	if keep == 0 {
		keep = defaultKeepMessages
	}
	split := splitPoint(call.Messages, keep)
	if split <= 0 {
		return nil
	}
	old, recent := call.Messages[:split], call.Messages[split:]
	summary, err := c.summarise(ctx, call, old)
	if err != nil {
		return fmt.Errorf("compaction: %w", err)
	}
	msg := llm.Message{
		"type": "human", "id": uuid.NewString(),
		"content":           "Summary of the earlier conversation (older messages were compacted):\n\n" + summary,
		"additional_kwargs": map[string]any{"lc_source": SummaryMarker, "compacted_messages": len(old)},
		"response_metadata": map[string]any{},
	}
	// Rewrite the channel: drop everything, then re-add the summary and the
	// recent messages (same ids, so nothing is duplicated).
	update := []any{map[string]any{"type": "remove", "id": channels.RemoveAllMessages}, msg}
	for _, m := range recent {
		update = append(update, m)
	}
	call.Update[channels.MessagesChannel] = update
	call.Messages = append([]llm.Message{msg}, recent...)
	call.Runtime.Custom(map[string]any{"type": "compaction", "compacted_messages": len(old), "kept_messages": len(recent), "summary_id": msg["id"]})
	return nil
}

// splitPoint returns the index of the first kept message: at most keep
// messages are kept, and a tool result is never separated from the AI
// message that called it.
func splitPoint(msgs []llm.Message, keep int) int {
	split := len(msgs) - keep
	if split <= 0 {
		return 0
	}
	for split > 0 && msgs[split]["type"] == "tool" {
		split--
	}
	return split
}

func (c *compaction) summarise(ctx context.Context, call *ModelCall, old []llm.Message) (string, error) {
	model, err := c.models(c.model, override(call.Runtime, "model"))
	if err != nil {
		return "", err
	}
	transcript, err := json.Marshal(old)
	if err != nil {
		return "", err
	}
	prompt := c.cfg.Prompt
	if prompt == "" {
		prompt = defaultSummaryPrompt
	}
	resp, err := model.Generate(ctx, llm.Request{Messages: []llm.Message{
		{"type": "system", "content": prompt},
		{"type": "human", "content": string(transcript)},
	}}, nil)
	if err != nil {
		return "", err
	}
	reportUsage(call.Runtime, resp)
	text, _ := resp.Message["content"].(string)
	return text, nil
}
