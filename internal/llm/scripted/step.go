package scripted

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Step is the scripted answer to one request. The zero Step answers with an
// empty assistant message. Build steps with Text, ToolCalls, Error or Hang and
// refine them with the With*/Split*/Then* methods, which return copies.
type Step struct {
	// Text is the assistant's content.
	Text string
	// Chunks splits Text into this many streamed deltas of near-equal rune
	// counts (default 1).
	Chunks int
	// ToolCalls are streamed after Text, one after another, as OpenAI does for
	// parallel calls.
	ToolCalls []ToolCall
	// ArgChunks splits each tool call's arguments into this many deltas
	// (default 1).
	ArgChunks int
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// Model is the model name reported; default: the requested model.
	Model string
	// Usage is reported in the usage chunk (streaming with include_usage) or
	// the usage field (JSON); default: a word-count estimate.
	Usage *Usage

	// Status, when not 0 or 200, answers with that HTTP status and an OpenAI
	// error body carrying ErrorMessage (default: the status text).
	Status       int
	ErrorMessage string
	// Header is added to the response (e.g. Retry-After).
	Header http.Header

	// FirstByteDelay is waited before the status line; ChunkDelay between
	// streamed content and tool-call deltas.
	FirstByteDelay time.Duration
	ChunkDelay     time.Duration

	// Hang keeps the response open until the client disconnects (or the
	// server closes) after writing the step's deltas, without finishing the
	// stream. A Hang step without content, or answering a non-streaming
	// request, hangs before the status line.
	Hang bool
	// Abort drops the connection after AbortAfterChunks streamed deltas
	// (before the status line when 0), like a crashing upstream.
	Abort            bool
	AbortAfterChunks int

	// SendTimestamps replaces the content of every streamed content delta
	// with SendMarker of the time the delta is written, and gives the finish
	// delta such a marker as well, so that a client can tell how long each
	// chunk took to reach it and when the response ended. A non-streaming
	// answer's content is one marker of its write time. Text still sets how
	// many content deltas there are. For benchmarks.
	SendTimestamps bool
}

// Usage is the token usage a step reports.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// ToolCall is one tool call a step makes. Arguments is sent verbatim, so it
// may be invalid JSON on purpose.
type ToolCall struct {
	// ID defaults to "call_<n>" with n counting from 1 per response.
	ID        string
	Name      string
	Arguments string
}

// Text returns a step answering with text.
func Text(text string) Step { return Step{Text: text} }

// ToolCalls returns a step answering with the given (parallel) tool calls.
func ToolCalls(calls ...ToolCall) Step { return Step{ToolCalls: calls} }

// Call returns a tool call of name with args encoded as JSON. It panics when
// args cannot be encoded, which is a bug in the test.
func Call(name string, args any) ToolCall {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("scripted: encode tool args: %v", err))
	}
	return ToolCall{Name: name, Arguments: string(raw)}
}

// RawCall returns a tool call of name whose arguments are sent verbatim.
func RawCall(name, arguments string) ToolCall {
	return ToolCall{Name: name, Arguments: arguments}
}

// Error returns a step answering with an HTTP error status.
func Error(status int, message string) Step {
	return Step{Status: status, ErrorMessage: message}
}

// Hang returns a step that never answers: it waits for the client to
// disconnect before writing anything.
func Hang() Step { return Step{Hang: true} }

// Split returns s with Text streamed in n deltas.
func (s Step) Split(n int) Step { s.Chunks = n; return s }

// SplitArgs returns s with each tool call's arguments streamed in n deltas.
func (s Step) SplitArgs(n int) Step { s.ArgChunks = n; return s }

// WithUsage returns s reporting the given token counts.
func (s Step) WithUsage(prompt, completion int) Step {
	s.Usage = &Usage{PromptTokens: prompt, CompletionTokens: completion}
	return s
}

// WithLatency returns s waiting firstByte before answering and between
// streamed deltas.
func (s Step) WithLatency(firstByte, between time.Duration) Step {
	s.FirstByteDelay, s.ChunkDelay = firstByte, between
	return s
}

// WithHeader returns s adding a response header.
func (s Step) WithHeader(key, value string) Step {
	h := make(http.Header, len(s.Header)+1)
	maps.Copy(h, s.Header)
	h.Add(key, value)
	s.Header = h
	return s
}

// WithRetryAfter returns s sending a Retry-After header (seconds, possibly
// fractional, or an HTTP date).
func (s Step) WithRetryAfter(value string) Step { return s.WithHeader("Retry-After", value) }

// WithFinishReason returns s reporting reason as finish_reason.
func (s Step) WithFinishReason(reason string) Step { s.FinishReason = reason; return s }

// WithModel returns s reporting model as the answering model.
func (s Step) WithModel(model string) Step { s.Model = model; return s }

// WithSendTimestamps returns s with SendTimestamps set: each streamed
// content delta, and the finish delta, carries the time it was sent.
func (s Step) WithSendTimestamps() Step { s.SendTimestamps = true; return s }

// sendMarkerPrefix starts every send-time marker.
const sendMarkerPrefix = "[sent:"

// SendMarker returns the marker a WithSendTimestamps step writes for a delta
// sent at t: "[sent:<unix nanoseconds>]".
func SendMarker(t time.Time) string {
	return sendMarkerPrefix + strconv.FormatInt(t.UnixNano(), 10) + "]"
}

// SendTimes returns the times of the send markers in s (a chunk's content or
// a whole message's), in order of appearance; malformed markers are skipped.
func SendTimes(s string) []time.Time {
	var out []time.Time
	for {
		i := strings.Index(s, sendMarkerPrefix)
		if i < 0 {
			return out
		}
		s = s[i+len(sendMarkerPrefix):]
		j := strings.IndexByte(s, ']')
		if j < 0 {
			return out
		}
		if ns, err := strconv.ParseInt(s[:j], 10, 64); err == nil {
			out = append(out, time.Unix(0, ns))
		}
		s = s[j+1:]
	}
}

// ThenHang returns s keeping the stream open after its deltas until the
// client disconnects.
func (s Step) ThenHang() Step { s.Hang = true; return s }

// AbortAfter returns s dropping the connection after n streamed deltas.
func (s Step) AbortAfter(n int) Step { s.Abort, s.AbortAfterChunks = true, n; return s }

func (s Step) isError() bool { return s.Status != 0 && s.Status != http.StatusOK }

func (s Step) hasContent() bool { return s.Text != "" || len(s.ToolCalls) > 0 }

func (s Step) finishReason() string {
	switch {
	case s.FinishReason != "":
		return s.FinishReason
	case len(s.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// usage returns the step's usage or a deterministic estimate: words of the
// request's messages and of the reply.
func (s Step) usage(req ChatRequest) Usage {
	if s.Usage != nil {
		return *s.Usage
	}
	var u Usage
	for _, m := range req.Messages {
		u.PromptTokens += len(strings.Fields(m.Text())) + 1
	}
	u.CompletionTokens = len(strings.Fields(s.Text))
	for _, c := range s.ToolCalls {
		u.CompletionTokens += len(c.Arguments)/4 + 1
	}
	return u
}

// Responder answers a request for which no step is queued.
type Responder func(req ChatRequest) Step

// Echo answers with "echo: " and the text of the last user message, split in
// up to three deltas. It is the default Responder.
func Echo(req ChatRequest) Step {
	return Text("echo: " + req.LastUserText()).Split(3)
}

// split cuts s into n pieces of near-equal rune counts; fewer when s has
// fewer runes than n. It returns nil for an empty s.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	runes := []rune(s)
	if n <= 1 {
		return []string{s}
	}
	n = min(n, len(runes))
	out := make([]string, 0, n)
	start := 0
	for i := range n {
		end := (i + 1) * len(runes) / n
		out = append(out, string(runes[start:end]))
		start = end
	}
	return out
}
