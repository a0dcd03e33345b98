package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"agentserver/internal/retry"
)

// OpenAI is a Model speaking the OpenAI chat completions API (OpenAI itself
// or any compatible server) with streaming always on. It is safe for
// concurrent use.
type OpenAI struct {
	cfg    Config
	client *openai.Client
	log    *slog.Logger
	// policy spaces retries: RetryBaseDelay doubling up to RetryMaxDelay,
	// less up to a quarter at random, or the server's hint up to
	// MaxRetryAfter.
	policy retry.Policy
}

var _ Model = (*OpenAI)(nil)

// NewOpenAI returns a model for cfg, zero fields defaulted; log may be nil.
func NewOpenAI(cfg Config, log *slog.Logger) *OpenAI {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = recordingDoer{cfg.HTTPClient}
	policy := retry.Policy{Base: cfg.RetryBaseDelay, Max: cfg.RetryMaxDelay, Jitter: 0.25, MaxAfter: cfg.MaxRetryAfter}
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(oc), log: log, policy: policy}
}

// Generate streams one chat completion, delivering every content and
// tool-call delta to onChunk (which may be nil) as an AIMessageChunk, and
// returns the assembled AI message. Failed attempts are retried with backoff
// on 429, 5xx, timeouts and connection errors, but only while nothing has
// been delivered to onChunk.
func (o *OpenAI) Generate(ctx context.Context, req Request, onChunk ChunkFunc) (Response, error) {
	return observed(ctx, o.cfg.Model, func(ctx context.Context) (Response, error) { return o.generate(ctx, req, onChunk) })
}

func (o *OpenAI) generate(ctx context.Context, req Request, onChunk ChunkFunc) (Response, error) {
	creq, err := o.chatRequest(req)
	if err != nil {
		return Response{}, fmt.Errorf("llm: build request: %w", err)
	}
	id := "run-" + uuid.NewString()
	for attempt := 0; ; attempt++ {
		resp, delivered, err := o.attempt(ctx, creq, id, onChunk)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, canceled(ctx)
		}
		if delivered > 0 {
			return Response{}, fmt.Errorf("llm: %w after %d chunks: %w", ErrStreamInterrupted, delivered, err)
		}
		hint, again := retryable(err)
		if !again || attempt >= o.cfg.MaxRetries {
			return Response{}, fmt.Errorf("llm: chat completion (attempt %d of %d): %w", attempt+1, o.cfg.MaxRetries+1, err)
		}
		delay := o.backoff(attempt, hint)
		o.log.Warn("model call failed; retrying", "attempt", attempt+1, "delay", delay, "error", err)
		if retry.Wait(ctx, delay) != nil {
			return Response{}, canceled(ctx)
		}
	}
}

// canceled wraps the caller's context error and, when it differs, its cause.
func canceled(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return fmt.Errorf("llm: chat completion canceled: %w: %w", err, cause)
	}
	return fmt.Errorf("llm: chat completion canceled: %w", err)
}

// reasoningModel reports models that take max_completion_tokens instead of
// max_tokens.
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

func (o *OpenAI) chatRequest(req Request) (openai.ChatCompletionRequest, error) {
	msgs, err := toOpenAIMessages(req.Messages)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	model := req.Model
	if model == "" {
		model = o.cfg.Model
	}
	creq := openai.ChatCompletionRequest{
		Model:         model,
		Messages:      msgs,
		Tools:         toOpenAITools(req.Tools),
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	if req.Temperature != nil {
		creq.Temperature = float32(*req.Temperature)
		if creq.Temperature == 0 {
			// go-openai omits a zero temperature; the smallest positive
			// float32 is sent instead and means the same.
			creq.Temperature = math.SmallestNonzeroFloat32
		}
	}
	if req.MaxTokens > 0 {
		if reasoningModel(model) {
			creq.MaxCompletionTokens = req.MaxTokens
		} else {
			creq.MaxTokens = req.MaxTokens
		}
	}
	return creq, nil
}

// attempt makes one HTTP request and reads its stream to the end. delivered
// counts the chunks passed to onChunk.
func (o *OpenAI) attempt(ctx context.Context, creq openai.ChatCompletionRequest, id string, onChunk ChunkFunc) (resp Response, delivered int, err error) {
	var actx context.Context
	var cancel context.CancelFunc
	if o.cfg.Timeout > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, o.cfg.Timeout, ErrTimeout)
	} else {
		actx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	info := &attemptInfo{}
	actx = context.WithValue(actx, attemptKey{}, info)

	stream, err := o.client.CreateChatCompletionStream(actx, creq)
	if err != nil {
		return Response{}, 0, o.classify(actx, info, err)
	}
	defer stream.Close()

	acc := accumulator{id: id, model: creq.Model}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if acc.events == 0 {
				// A 200 without a single event: a proxy cut the response, or
				// the server ignored stream: true.
				return Response{}, 0, fmt.Errorf("%w: stream ended before its first event", ErrConnection)
			}
			break
		}
		if err != nil {
			return Response{}, acc.delivered, o.classify(actx, info, err)
		}
		if m := acc.add(chunk); m != nil {
			acc.delivered++
			if onChunk != nil {
				onChunk(m)
			}
		}
	}
	info.drain(cancel)
	return acc.response(), acc.delivered, nil
}

// classify turns a client error into one of the package's error kinds.
func (o *OpenAI) classify(actx context.Context, info *attemptInfo, err error) error {
	if errors.Is(context.Cause(actx), ErrTimeout) {
		return fmt.Errorf("%w after %s", ErrTimeout, o.cfg.Timeout)
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		if apiErr.HTTPStatusCode == 0 { // an error event inside a 200 stream
			return fmt.Errorf("provider error in stream: %w", err)
		}
		return &StatusError{StatusCode: apiErr.HTTPStatusCode, Message: apiErr.Message, RetryAfter: info.retryAfter, Err: err}
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		msg := strings.TrimSpace(string(reqErr.Body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &StatusError{StatusCode: reqErr.HTTPStatusCode, Message: msg, RetryAfter: info.retryAfter, Err: err}
	}
	if connectionError(err) {
		return fmt.Errorf("%w: %w", ErrConnection, err)
	}
	return err
}

func connectionError(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// retryable reports whether err is worth another attempt and the server's
// delay hint, if any.
func retryable(err error) (time.Duration, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.RetryAfter, se.Retryable()
	}
	return 0, errors.Is(err, ErrTimeout) || errors.Is(err, ErrConnection)
}

// backoff returns the delay before retry number attempt+1: the server's hint
// capped at MaxRetryAfter, else base·2^attempt capped at RetryMaxDelay, less
// up to 25% jitter.
func (o *OpenAI) backoff(attempt int, hint time.Duration) time.Duration {
	return o.policy.Delay(attempt, hint)
}

// attemptInfo carries what the HTTP layer saw of one attempt back past
// go-openai, which drops response headers on errors.
type attemptInfo struct {
	retryAfter time.Duration
	body       io.Reader // of a successful response
}

type attemptKey struct{}

// drainTimeout bounds drain for servers that keep the response open after
// [DONE].
const drainTimeout = 100 * time.Millisecond

// drain reads the tail of a finished stream (after [DONE] only the chunked
// terminator is left) so that the connection goes back to the pool instead
// of being closed. If the tail does not come within drainTimeout, cancel
// aborts the request, which closes the connection.
func (i *attemptInfo) drain(cancel context.CancelFunc) {
	if i.body == nil {
		return
	}
	t := time.AfterFunc(drainTimeout, cancel)
	_, _ = io.Copy(io.Discard, io.LimitReader(i.body, 4<<10))
	t.Stop()
}

// recordingDoer is the go-openai HTTP client: it notes the Retry-After hint
// of failed responses and the body of successful ones in the request's
// attemptInfo.
type recordingDoer struct{ c *http.Client }

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	info, _ := req.Context().Value(attemptKey{}).(*attemptInfo)
	if err != nil || info == nil {
		return resp, err
	}
	if resp.StatusCode >= 400 {
		info.retryAfter = parseRetryAfter(resp.Header, time.Now())
	} else {
		info.body = resp.Body
	}
	return resp, nil
}

// parseRetryAfter reads retry-after-ms (OpenAI's, in milliseconds) or
// Retry-After (seconds, possibly fractional, or an HTTP date).
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return time.Duration(min(ms, 1e9) * float64(time.Millisecond))
		}
	}
	return retry.After(h.Get("Retry-After"), now)
}
