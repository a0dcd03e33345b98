// Command scriptedllm serves a deterministic OpenAI-compatible chat
// completions API over real HTTP, for tests and demos: point a server at it
// with OPENAI_BASE_URL=<printed URL> (any OPENAI_API_KEY) and its agents
// behave predictably without a real model. It is built on
// internal/llm/scripted and never talks to the network beyond its listener.
//
//	scriptedllm -addr 127.0.0.1:0
//
// It listens on -addr (default 127.0.0.1:0, a free port), prints its base URL
// (e.g. "http://127.0.0.1:40123/v1") as one line on stdout, and serves until
// SIGTERM or SIGINT.
//
// It is also the demo model of docs/supervisor.md and docs/subagents.md:
// plain requests such as "start researcher: …" drive the supervisor's and
// the lead's tools, so their behaviour can be tried without a model key.
//
// Every chat completions request is answered by these rules, first match wins
// ("the last user text" is the text of the last message with role "user"):
//
//  1. The request ends with tool results (role "tool"): the text
//     "done: <first line of the result>", one such line per trailing result.
//  2. The last user text is "write <path> <content…>" and the request offers
//     the write_file tool: one write_file call with arguments
//     {"file_path": <path>, "content": <content…>} (content is the rest of
//     the text after the path's separating whitespace, newlines kept).
//  3. The last user text is "todo <a>; <b>[; …]" and the request offers the
//     write_todos tool: one write_todos call with arguments
//     {"todos": [{"content": "<a>", "status": "pending"}, …]}, one item per
//     non-empty ";"-separated part, trimmed.
//  4. Every non-empty line of the last user text is one of these commands
//     and the request offers its tool: one call per line, in order (several
//     lines make parallel calls). Keywords are case-insensitive.
//     - "start <type>: <description>": start_async_task
//     {"description", "subagent_type"}
//     (the JavaScript deepagents tools get their own argument names,
//     agentName, taskId and statusFilter, when their schema uses them)
//     - "check <task_id>": check_async_task {"task_id"}
//     - "update <task_id>: <message>": update_async_task {"task_id", "message"}
//     - "cancel <task_id>": cancel_async_task {"task_id"}
//     - "list" or "list <status>": list_async_tasks {"status_filter"}
//     - "delegate: <prompt>" or "delegate <type>: <prompt>": task
//     {"description": <the prompt's first five words>, "prompt",
//     "subagent_type": <type, default general-purpose>}
//  5. The last user text is "system prompt": the text of the request's
//     system message (to see what an agent's prompt became).
//  6. The last user text is "slow: <text>": the text "You said: <text>",
//     streamed in as many deltas as it has words, 250 ms apart (a run that
//     stays live long enough to watch and cancel).
//  7. Otherwise: the text "You said: <last user text>", streamed in 4 deltas
//     of near-equal length (fewer for very short texts).
//
// Tool calls get the id "call_<number of messages in the request>" (the
// second and later calls of one answer "call_<n>_<i>"), so ids differ
// between the turns of one conversation. Every answer reports usage:
// prompt_tokens = 10 × the number of messages in the request (the system
// prompt included), completion_tokens = the number of words of the text
// plus 10 per tool call. The model name reported is the requested one.
//
// POST /v1/embeddings answers each input with a deterministic bag-of-words
// vector (scripted.Embed; 64 dimensions unless the request asks for
// "dimensions"), so that a server with store.index can rank store items
// without a real embedding model.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"agentserver/internal/llm/scripted"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return // the usage was printed; asking for it is not an error
	case err != nil:
		fmt.Fprintln(os.Stderr, "scriptedllm:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; it writes the base URL as one line to stdout
// once the listener is up.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scriptedllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "scriptedllm is a deterministic OpenAI-compatible model server: the demo model of")
		fmt.Fprintln(stderr, "docs/supervisor.md and docs/subagents.md, and the tests' model. Point a server at the")
		fmt.Fprintln(stderr, "base URL it prints with OPENAI_BASE_URL. Its rules: go doc ./cmd/scriptedllm")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Usage: scriptedllm [--addr host:port]")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "host:port to listen on (port 0: a free one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	srv, err := scripted.Start(*addr)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.SetResponder(Respond)
	if _, err := fmt.Fprintln(stdout, srv.URL()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

var (
	writeRe  = regexp.MustCompile(`(?s)^\s*write\s+(\S+)\s+(.+)$`)
	todoRe   = regexp.MustCompile(`(?s)^\s*todo\s+(.+)$`)
	promptRe = regexp.MustCompile(`(?i)^\s*system prompt\s*$`)
	slowRe   = regexp.MustCompile(`(?is)^\s*slow\s*:\s*(.+)$`)
)

// slowDelta is the pause between the words of a "slow:" answer.
const slowDelta = 250 * time.Millisecond

// textChunks is how many deltas a plain text answer is streamed in.
const textChunks = 4

// Respond answers one request by the rules of the package comment.
func Respond(req scripted.ChatRequest) scripted.Step {
	var step scripted.Step
	if results := trailingToolResults(req); len(results) > 0 {
		step = scripted.Text(strings.Join(results, "\n"))
	} else if calls := toolCallsFor(req); len(calls) > 0 {
		for i := range calls {
			calls[i].ID = fmt.Sprintf("call_%d", len(req.Messages))
			if i > 0 {
				calls[i].ID += fmt.Sprintf("_%d", i+1)
			}
		}
		step = scripted.ToolCalls(calls...)
	} else if promptRe.MatchString(req.LastUserText()) {
		step = scripted.Text(systemText(req)).Split(textChunks)
	} else if m := slowRe.FindStringSubmatch(req.LastUserText()); m != nil {
		text := "You said: " + m[1]
		step = scripted.Text(text).Split(len(strings.Fields(text))).WithLatency(0, slowDelta)
	} else {
		step = scripted.Text("You said: " + req.LastUserText()).Split(textChunks)
	}
	return step.WithUsage(10*len(req.Messages), len(strings.Fields(step.Text))+10*len(step.ToolCalls))
}

// trailingToolResults returns "done: <first line>" for each tool message at
// the end of the request, in order.
func trailingToolResults(req scripted.ChatRequest) []string {
	i := len(req.Messages)
	for i > 0 && req.Messages[i-1].Role == "tool" {
		i--
	}
	var out []string
	for _, m := range req.Messages[i:] {
		first, _, _ := strings.Cut(m.Text(), "\n")
		out = append(out, "done: "+first)
	}
	return out
}

// systemText is the text of the request's first system message.
func systemText(req scripted.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "system" {
			return m.Text()
		}
	}
	return "(no system prompt)"
}

// toolCallsFor returns the tool calls rules 2 to 4 ask for, if one applies.
func toolCallsFor(req scripted.ChatRequest) []scripted.ToolCall {
	text := req.LastUserText()
	offered := req.ToolNames()
	if m := writeRe.FindStringSubmatch(text); m != nil && slices.Contains(offered, "write_file") {
		return []scripted.ToolCall{scripted.Call("write_file", map[string]any{"file_path": m[1], "content": m[2]})}
	}
	if m := todoRe.FindStringSubmatch(text); m != nil && slices.Contains(offered, "write_todos") {
		var todos []any
		for _, part := range strings.Split(m[1], ";") {
			if part = strings.TrimSpace(part); part != "" {
				todos = append(todos, map[string]any{"content": part, "status": "pending"})
			}
		}
		if len(todos) > 0 {
			return []scripted.ToolCall{scripted.Call("write_todos", map[string]any{"todos": todos})}
		}
	}
	return commandCalls(text, req)
}
