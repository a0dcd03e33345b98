package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"agentserver/internal/asynctasks"
	"agentserver/internal/channels"
	"agentserver/internal/lifecycle"
	"agentserver/internal/tools"
)

// Channel is the state channel holding the tracked tasks.
const Channel = "async_tasks"

// ErrInvalidConfig reports a supervisor configuration that cannot be served.
var ErrInvalidConfig = errors.New("invalid async subagent configuration")

// Subagent is one async subagent a supervisor may start.
type Subagent struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	GraphID     string            `json:"graph_id"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Protocol is how the subagent at URL is reached: ProtocolAgent (the
	// default) or ProtocolA2A (URL is then the agent's A2A endpoint and
	// GraphID is optional).
	Protocol string `json:"protocol,omitempty"`
	// ForwardCredentials forwards the credentials of the user the run
	// acts for to the remote server (asynctasks.HTTPConfig).
	ForwardCredentials bool `json:"forward_credentials,omitempty"`
}

// Protocols of a remote subagent.
const (
	ProtocolAgent = "agent-protocol"
	ProtocolA2A   = "a2a"
)

// Config configures the supervisor middleware.
type Config struct {
	Subagents []Subagent
	// Prompt replaces the default system prompt section; nil keeps the
	// default and a pointer to "" removes it.
	Prompt *string
	// NotifyOnCompletion queues a supervisor run when a task finishes.
	NotifyOnCompletion bool
	// CancelOnThreadDelete cancels live tasks when the supervisor thread is
	// deleted.
	CancelOnThreadDelete bool
}

// Validate checks the subagent list: non-empty, unique names, required fields.
func (c Config) Validate() error {
	if len(c.Subagents) == 0 {
		return fmt.Errorf("%w: at least one async subagent must be specified", ErrInvalidConfig)
	}
	seen := map[string]bool{}
	var dupes []string
	for i, s := range c.Subagents {
		if err := s.validate(); err != nil {
			return fmt.Errorf("%w: async_subagents[%d]: %v", ErrInvalidConfig, i, err)
		}
		if seen[s.Name] {
			dupes = append(dupes, s.Name)
		}
		seen[s.Name] = true
	}
	if len(dupes) > 0 {
		return fmt.Errorf("%w: duplicate async subagent names: %s", ErrInvalidConfig, strings.Join(dupes, ", "))
	}
	return nil
}

// validate checks one subagent's required fields for its protocol.
func (s Subagent) validate() error {
	switch s.Protocol {
	case "", ProtocolAgent:
		if s.Name == "" || s.Description == "" || s.GraphID == "" {
			return errors.New("name, description and graph_id are required")
		}
	case ProtocolA2A:
		if s.Name == "" || s.Description == "" || s.URL == "" {
			return errors.New("name, description and url are required for an a2a subagent")
		}
	default:
		return fmt.Errorf("unknown protocol %q (want %s or %s)", s.Protocol, ProtocolAgent, ProtocolA2A)
	}
	if s.ForwardCredentials && s.URL == "" {
		return errors.New("forward_credentials needs a url (an in-process subagent already runs as the caller)")
	}
	return nil
}

// TransportFor returns the transport of a subagent.
type TransportFor func(Subagent) (asynctasks.Transport, error)

// Supervisor is the agent middleware that adds the five async task tools,
// their system prompt section and the async_tasks channel.
type Supervisor struct {
	cfg        Config
	subagents  map[string]Subagent
	names      []string
	transports map[string]asynctasks.Transport
	notifier   *Notifier
	now        func() time.Time
}

// New builds the middleware. notifier may be nil (no push updates).
func New(cfg Config, transportFor TransportFor, notifier *Notifier) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, subagents: map[string]Subagent{}, transports: map[string]asynctasks.Transport{}, notifier: notifier,
		now: lifecycle.WallClock}
	for _, sub := range cfg.Subagents {
		t, err := transportFor(sub)
		if err != nil {
			return nil, fmt.Errorf("%w: async subagent %q: %v", ErrInvalidConfig, sub.Name, err)
		}
		s.subagents[sub.Name] = sub
		s.transports[sub.Name] = t
		s.names = append(s.names, sub.Name)
	}
	return s, nil
}

// Name identifies the middleware.
func (s *Supervisor) Name() string { return "async_subagents" }

// Channels registers the async_tasks reducer.
func (s *Supervisor) Channels() map[string]channels.Reducer {
	return map[string]channels.Reducer{Channel: MergeTasks}
}

// InitialValues makes async_tasks an empty object from a supervisor
// thread's first input on, so clients never read it as null or absent.
func (s *Supervisor) InitialValues() map[string]any {
	return map[string]any{Channel: map[string]any{}}
}

// Tools returns the five async task tools.
func (s *Supervisor) Tools() []tools.Tool {
	return []tools.Tool{&startTool{s}, &checkTool{s}, &updateTool{s}, &cancelTool{s}, &listTool{s}}
}

// typesList renders "- name: description" lines in configuration order.
func (s *Supervisor) typesList() string {
	var b strings.Builder
	for i, n := range s.names {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- %s: %s", n, s.subagents[n].Description)
	}
	return b.String()
}

func (s *Supervisor) allowedTypes() string {
	quoted := make([]string, len(s.names))
	for i, n := range s.names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}

func (s *Supervisor) stamp() string {
	return s.now().Format("2006-01-02T15:04:05Z")
}

// ThreadDeleted cancels the live tasks tracked in a deleted supervisor
// thread's values, when the configuration asks for it. It returns how many
// it cancelled.
func (s *Supervisor) ThreadDeleted(ctx context.Context, values map[string]any) int {
	if !s.cfg.CancelOnThreadDelete {
		return 0
	}
	n := 0
	for _, t := range tasksOf(values) {
		if asynctasks.Terminal(t.Status) {
			continue
		}
		if _, tr, _ := s.transportOf(t); tr != nil && tr.Cancel(ctx, t.ThreadID, t.RunID) == nil {
			n++
		}
	}
	return n
}

// Task is one record of the async_tasks channel.
type Task struct {
	TaskID        string `json:"task_id"`
	AgentName     string `json:"agent_name"`
	ThreadID      string `json:"thread_id"`
	RunID         string `json:"run_id"`
	Status        string `json:"status"`
	CreatedAt     string `json:"created_at"`
	LastCheckedAt string `json:"last_checked_at"`
	LastUpdatedAt string `json:"last_updated_at"`
}

func (t Task) asMap() map[string]any {
	return map[string]any{
		"task_id": t.TaskID, "agent_name": t.AgentName, "thread_id": t.ThreadID, "run_id": t.RunID,
		"status": t.Status, "created_at": t.CreatedAt, "last_checked_at": t.LastCheckedAt, "last_updated_at": t.LastUpdatedAt,
	}
}

func taskFrom(v any) (Task, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Task{}, false
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	return Task{
		TaskID: str("task_id"), AgentName: str("agent_name"), ThreadID: str("thread_id"), RunID: str("run_id"),
		Status: str("status"), CreatedAt: str("created_at"), LastCheckedAt: str("last_checked_at"), LastUpdatedAt: str("last_updated_at"),
	}, true
}

// tasksOf reads the tracked tasks from a state snapshot, sorted by creation.
func tasksOf(state map[string]any) []Task {
	m, _ := state[Channel].(map[string]any)
	out := make([]Task, 0, len(m))
	for _, v := range m {
		if t, ok := taskFrom(v); ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].TaskID < out[j].TaskID
	})
	return out
}

// trackedTask finds a task by id; surrounding whitespace is tolerated.
func trackedTask(state map[string]any, id string) (Task, bool) {
	m, _ := state[Channel].(map[string]any)
	return taskFrom(m[strings.TrimSpace(id)])
}

// MergeTasks is the async_tasks reducer: a map merge where the last record
// written for a task id wins, and no task is ever dropped.
func MergeTasks(current, update any) (any, error) {
	cur, _ := current.(map[string]any)
	upd, ok := update.(map[string]any)
	if update != nil && !ok {
		return nil, fmt.Errorf("%w: async_tasks must be an object keyed by task id", channels.ErrInvalidUpdate)
	}
	out := make(map[string]any, len(cur)+len(upd))
	for k, v := range cur {
		out[k] = v
	}
	for k, v := range upd {
		out[k] = v
	}
	return out, nil
}

func update(tasks ...Task) map[string]any {
	m := map[string]any{}
	for _, t := range tasks {
		m[t.TaskID] = t.asMap()
	}
	return map[string]any{Channel: m}
}
