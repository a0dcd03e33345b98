package runs

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/storage"
)

// TestWebhookRetries: a webhook answered 5xx or 429 is sent again after
// 200 ms, then 800 ms, at most three times in all; a 4xx other than 429
// is not retried.
func TestWebhookRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []int
		posts   int
	}{
		{"delivered at once", []int{200}, 1},
		{"503 then 429 then delivered", []int{503, 429, 200}, 3},
		{"gives up after three", []int{500, 502, 503, 200}, 3},
		{"4xx is final", []int{404, 200}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var at []time.Time
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				w.WriteHeader(tc.answers[len(at)])
				at = append(at, time.Now())
			}))
			defer hook.Close()
			s := &Service{ctx: context.Background(), log: slog.New(slog.DiscardHandler), now: time.Now,
				opts: Options{WebhookClient: hook.Client()}}
			s.sendWebhook(hook.URL, storage.Run{RunID: uuid.New(), ThreadID: uuid.New(), Status: storage.RunSuccess}, nil)
			s.wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(at) != tc.posts {
				t.Fatalf("%d posts, want %d", len(at), tc.posts)
			}
			for i, want := range []time.Duration{200 * time.Millisecond, 800 * time.Millisecond}[:len(at)-1] {
				if gap := at[i+1].Sub(at[i]); gap < want {
					t.Errorf("retry %d came after %v, want at least %v", i+1, gap, want)
				}
			}
		})
	}
}
