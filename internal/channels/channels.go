// Package channels applies state updates to a thread's values. Each top-level
// key of a thread's values is a channel; an update to a channel is folded into
// the current value by the channel's reducer. Channels without a registered
// reducer are overwritten, as in LangGraph's default LastValue channel.
//
// Invariants: Apply never mutates its inputs, and a reducer error leaves the
// state untouched (Apply returns the error and no new state).
package channels

import (
	"errors"
	"fmt"
	"sync"

	"agentserver/internal/jsonx"
)

// ErrInvalidUpdate reports an update a reducer cannot apply.
var ErrInvalidUpdate = errors.New("invalid state update")

// Reducer folds update into current and returns the new channel value.
// current is nil when the channel has no value yet. Reducers must not mutate
// their arguments.
type Reducer func(current, update any) (any, error)

// Registry maps channel names to reducers. It is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	reducers map[string]Reducer
}

// NewRegistry returns a registry with the built-in reducers: "messages"
// (LangGraph's add_messages semantics).
func NewRegistry() *Registry {
	r := &Registry{reducers: map[string]Reducer{}}
	r.Register(MessagesChannel, AddMessages)
	return r
}

// Register sets the reducer of a channel, replacing any earlier one.
func (r *Registry) Register(channel string, fn Reducer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reducers[channel] = fn
}

// Reducer returns the reducer of a channel, or nil for overwrite semantics.
func (r *Registry) Reducer(channel string) Reducer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.reducers[channel]
}

// Apply returns state with update folded in. Keys of update with a reducer
// are reduced; all others overwrite. Neither argument is modified.
func (r *Registry) Apply(state, update map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(state)+len(update))
	for k, v := range state {
		out[k] = v
	}
	for k, v := range update {
		fn := r.Reducer(k)
		if fn == nil {
			out[k] = jsonx.Clone(v)
			continue
		}
		nv, err := fn(state[k], v)
		if err != nil {
			return nil, fmt.Errorf("channel %q: %w", k, err)
		}
		out[k] = nv
	}
	return out, nil
}
