package assistants

import (
	"context"
	"errors"
	"fmt"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
)

// Shared reports whether a is the system assistant of its graph (made by
// the server, one per graph of langgraph.json): every caller whose
// Authorizer allows the action may read and run it, whatever its filter
// says, as it has no owner; only unrestricted callers change it.
func Shared(a Assistant) bool {
	return a.AssistantID == SystemID(a.GraphID) && a.Metadata["created_by"] == "system"
}

// access asks the caller of ctx for action on assistants with value and
// returns the storage filter of the assistants it may act on. Reads admit
// the shared (system) assistants; writes do not.
func access(ctx context.Context, action string, value map[string]any) (storage.AssistantQuery, error) {
	restrict, err := authz.Scope(ctx, authz.Assistants, action, value)
	if err != nil {
		return storage.AssistantQuery{}, err
	}
	q := storage.AssistantQuery{Restrict: restrict}
	if action == authz.Read || action == authz.Search {
		q.Shared = Shared
	}
	return q, nil
}

// accessTo is access for an action on the assistant ref names.
func accessTo(ctx context.Context, action, ref string) (storage.AssistantQuery, error) {
	return access(ctx, action, map[string]any{"assistant_id": ref})
}

// creationMetadata asks the caller of ctx to create an assistant and
// returns the metadata to store, with the owner fields the Authorizer
// wrote into it.
func creationMetadata(ctx context.Context, p CreateParams) (map[string]any, error) {
	value := map[string]any{"graph_id": p.GraphID, "metadata": orEmpty(p.Metadata), "config": p.Config, "context": p.Context, "name": p.Name}
	if p.AssistantID != nil {
		value["assistant_id"] = p.AssistantID.String()
	}
	if _, err := authz.Authorize(ctx, authz.Assistants, authz.Create, value); err != nil {
		return nil, err
	}
	md, _ := value["metadata"].(map[string]any)
	return orEmpty(md), nil
}

// getAs reads the current record of the assistant ref names when q admits
// it; one q does not admit is missing, except a shared one a restricted
// caller tries to change, which is forbidden (the caller can see it).
func (s *Service) getAs(tx *storage.Tx, ref string, q storage.AssistantQuery) (Assistant, error) {
	id, err := s.Resolve(ref)
	if err != nil {
		return Assistant{}, err
	}
	a, err := tx.GetAssistantWhere(id, q)
	if errors.Is(err, storage.ErrNotFound) {
		if q.Shared == nil && len(q.Restrict) > 0 {
			if cur, err := tx.GetAssistant(id); err == nil && Shared(cur) {
				return Assistant{}, fmt.Errorf("assistant %q is the graph's system assistant, shared by every user; only the operator changes it: %w", ref, errdefs.ErrForbidden)
			}
		}
		return Assistant{}, notFound(ref)
	}
	return a, err
}

// keepsOwner fails when metadata would take an assistant out of the
// caller's reach (a patch that changes its owner fields).
func keepsOwner(ref string, metadata map[string]any, q storage.AssistantQuery) error {
	if len(q.Restrict) > 0 && !jsonx.Contains(metadata, q.Restrict) {
		return fmt.Errorf("metadata would take assistant %q out of the caller's reach: %w", ref, errdefs.ErrForbidden)
	}
	return nil
}
