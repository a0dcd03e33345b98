package threads

import (
	"context"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
)

// Restriction asks the caller of ctx for action on threads (authz) and
// returns the metadata containment the threads it acts on must satisfy
// (nil: any thread). value is what the action acts on; for create, the
// Authorizer may write owner fields into its "metadata".
func Restriction(ctx context.Context, action string, value map[string]any) (map[string]any, error) {
	return authz.Scope(ctx, authz.Threads, action, value)
}

// visible is Restriction for an action on one existing thread.
func visible(ctx context.Context, action string, id uuid.UUID) (map[string]any, error) {
	return Restriction(ctx, action, map[string]any{"thread_id": id.String()})
}

// creationMetadata asks the caller of ctx to create a thread with metadata
// and returns the metadata to store (with the owner fields the Authorizer
// wrote into it) and the restriction the thread must then satisfy.
func creationMetadata(ctx context.Context, id uuid.UUID, metadata map[string]any) (map[string]any, map[string]any, error) {
	value := map[string]any{"thread_id": id.String(), "metadata": jsonx.CloneMap(metadata)}
	restrict, err := Restriction(ctx, authz.Create, value)
	if err != nil {
		return nil, nil, err
	}
	md, _ := value["metadata"].(map[string]any)
	return md, restrict, nil
}

// CreationMetadata is creationMetadata for the run engine, which creates
// threads for stateless runs and if_not_exists.
func CreationMetadata(ctx context.Context, id uuid.UUID, metadata map[string]any) (map[string]any, map[string]any, error) {
	return creationMetadata(ctx, id, metadata)
}

// checkVisible fails with ErrNotFound when the thread id does not satisfy
// restrict, as when it does not exist.
func checkVisible(tx *storage.Tx, id uuid.UUID, restrict map[string]any) error {
	_, err := tx.GetThreadWhere(id, restrict)
	return err
}

// Exists reports whether a thread with id exists, whoever owns it. It is
// for deciding between "not yet made" and "another user's" (both of which
// a caller is told as missing); never show its answer to a caller.
func (s *Service) Exists(ctx context.Context, id uuid.UUID) bool {
	ok, _ := storage.Read(ctx, s.db, func(tx *storage.Tx) (bool, error) { return tx.ThreadExists(id), nil })
	return ok
}
