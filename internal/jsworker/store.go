package jsworker

import (
	"context"
	"encoding/json"
	"fmt"

	"agentserver/internal/store"
)

// Store is what the graphs' BaseStore reaches: the server's store service.
type Store interface {
	Get(ctx context.Context, namespace []string, key string, refreshTTL bool) (*store.Item, error)
	Put(ctx context.Context, namespace []string, key string, value map[string]any, index any, ttlMinutes *float64) error
	Delete(ctx context.Context, namespace []string, key string) error
	Search(ctx context.Context, prefix []string, filter map[string]any, limit, offset int, query string, refreshTTL bool) ([]store.Item, error)
	ListNamespaces(ctx context.Context, prefix, suffix []string, maxDepth *int, limit, offset int) ([][]string, error)
	RefreshOnRead() bool
}

// storeOp is one operation of a store.batch call.
type storeOp struct {
	Op              string         `json:"op"`
	Namespace       []string       `json:"namespace"`
	Key             string         `json:"key"`
	Value           map[string]any `json:"value"`
	Index           any            `json:"index"`
	TTL             *float64       `json:"ttl"`
	NamespacePrefix []string       `json:"namespace_prefix"`
	Filter          map[string]any `json:"filter"`
	Limit           int            `json:"limit"`
	Offset          int            `json:"offset"`
	Query           string         `json:"query"`
	Prefix          []string       `json:"prefix"`
	Suffix          []string       `json:"suffix"`
	MaxDepth        *int           `json:"max_depth"`
}

// storeBatch runs the operations of a store.batch call in order and
// returns one result each: an item or null (get), null (put, delete), a
// list of items (search), a list of namespaces (list_namespaces).
func (s *session) storeBatch(raw json.RawMessage) (map[string]any, error) {
	var p struct {
		Ops []storeOp `json:"ops"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if s.store == nil {
		return nil, &WireError{Name: "StoreUnavailable", Message: "this server gives graphs no store"}
	}
	ctx := context.Background()
	results := make([]any, len(p.Ops))
	for i, op := range p.Ops {
		var err error
		results[i], err = s.storeOne(ctx, op)
		if err != nil {
			return nil, &WireError{Name: "InvalidStoreOperation", Message: fmt.Sprintf("store %s: %v", op.Op, err)}
		}
	}
	return map[string]any{"results": results}, nil
}

func (s *session) storeOne(ctx context.Context, op storeOp) (any, error) {
	switch op.Op {
	case "get":
		it, err := s.store.Get(ctx, op.Namespace, op.Key, s.store.RefreshOnRead())
		if it == nil || err != nil {
			return nil, err
		}
		return it, nil
	case "put":
		return nil, s.store.Put(ctx, op.Namespace, op.Key, op.Value, op.Index, op.TTL)
	case "delete":
		return nil, s.store.Delete(ctx, op.Namespace, op.Key)
	case "search":
		return s.store.Search(ctx, op.NamespacePrefix, op.Filter, op.Limit, op.Offset, op.Query, s.store.RefreshOnRead())
	case "list_namespaces":
		return s.store.ListNamespaces(ctx, op.Prefix, op.Suffix, op.MaxDepth, op.Limit, op.Offset)
	}
	return nil, fmt.Errorf("unknown operation %q", op.Op)
}
