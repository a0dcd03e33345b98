package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"agentserver/internal/retry"
	"agentserver/internal/storage"
)

// webhookAttempts bounds deliveries of one webhook.
const webhookAttempts = 3

// webhookPolicy spaces the deliveries of one webhook: 200 ms, then 800 ms.
var webhookPolicy = retry.Policy{Base: 200 * time.Millisecond, Factor: 4}

// sendWebhook POSTs the finished run and its final values to url in the
// background, retrying 5xx answers and network errors with backoff.
func (s *Service) sendWebhook(url string, run storage.Run, values map[string]any) {
	payload := map[string]any{
		"run_id": run.RunID, "thread_id": run.ThreadID, "assistant_id": run.AssistantID,
		"created_at": run.CreatedAt, "updated_at": run.UpdatedAt, "status": run.Status,
		"metadata": run.Metadata, "kwargs": run.Kwargs.Map(), "multitask_strategy": run.MultitaskStrategy,
		"run_started_at": run.StartedAt, "run_ended_at": run.EndedAt, "webhook_sent_at": s.now(),
		"values": values,
	}
	if run.Error != "" {
		payload["error"] = run.Error
	}
	body, err := json.Marshal(payload)
	if err != nil {
		s.log.Error("encode webhook", "run_id", run.RunID, "err", err)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for attempt := 1; ; attempt++ {
			err := s.postWebhook(url, body)
			if err == nil {
				return
			}
			if attempt == webhookAttempts {
				s.log.Warn("webhook failed", "run_id", run.RunID, "url", url, "attempts", attempt, "err", err)
				return
			}
			if retry.Wait(s.ctx, webhookPolicy.Delay(attempt-1, 0)) != nil {
				return
			}
		}
	}()
}

func (s *Service) postWebhook(url string, body []byte) error {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.opts.WebhookClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return nil
}
