package httpapi

import (
	"context"

	"agentserver/api"
	"agentserver/internal/store"
)

// PutStoreItem implements PUT /store/items.
func (h *Handler) PutStoreItem(ctx context.Context, req api.PutStoreItemRequestObject) (api.PutStoreItemResponseObject, error) {
	if req.Body == nil {
		return nil, invalidf("request body is required")
	}
	b := req.Body
	if err := h.store.PutEncoded(ctx, b.Namespace, b.Key, b.Value, b.Index, b.Ttl); err != nil {
		return nil, err
	}
	return api.PutStoreItem204Response{}, nil
}

// GetStoreItem implements GET /store/items; a missing item is 200 null.
func (h *Handler) GetStoreItem(ctx context.Context, req api.GetStoreItemRequestObject) (api.GetStoreItemResponseObject, error) {
	refresh, err := parseBool(req.Params.RefreshTtl, h.store.RefreshOnRead())
	if err != nil {
		return nil, err
	}
	it, err := h.store.Get(ctx, store.ParseNamespaceParam(req.Params.Namespace), req.Params.Key, refresh)
	if err != nil {
		return nil, err
	}
	var out api.StoreItemOrNull
	if it != nil {
		if err := out.FromStoreItem(toAPIItem(*it)); err != nil {
			return nil, err
		}
	}
	return api.GetStoreItem200JSONResponse(out), nil
}

// DeleteStoreItem implements DELETE /store/items.
func (h *Handler) DeleteStoreItem(ctx context.Context, req api.DeleteStoreItemRequestObject) (api.DeleteStoreItemResponseObject, error) {
	if req.Body == nil {
		return nil, invalidf("request body is required")
	}
	if err := h.store.Delete(ctx, req.Body.Namespace, req.Body.Key); err != nil {
		return nil, err
	}
	return api.DeleteStoreItem204Response{}, nil
}

// SearchStoreItems implements POST /store/items/search.
func (h *Handler) SearchStoreItems(ctx context.Context, req api.SearchStoreItemsRequestObject) (api.SearchStoreItemsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.StoreSearchRequest{}
	}
	refresh := h.store.RefreshOnRead()
	if b.RefreshTtl != nil {
		refresh = *b.RefreshTtl
	}
	items, err := h.store.Search(ctx, b.NamespacePrefix, b.Filter, intOr(b.Limit, 10), intOr(b.Offset, 0), deref(b.Query), refresh)
	if err != nil {
		return nil, err
	}
	out := make([]api.StoreItem, len(items))
	for i, it := range items {
		out[i] = toAPIItem(it)
	}
	return api.SearchStoreItems200JSONResponse{Items: out}, nil
}

// ListStoreNamespaces implements POST /store/namespaces.
func (h *Handler) ListStoreNamespaces(ctx context.Context, req api.ListStoreNamespacesRequestObject) (api.ListStoreNamespacesResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.StoreListNamespacesRequest{}
	}
	ns, err := h.store.ListNamespaces(ctx, b.Prefix, b.Suffix, b.MaxDepth, intOr(b.Limit, 100), intOr(b.Offset, 0))
	if err != nil {
		return nil, err
	}
	if ns == nil {
		ns = [][]string{}
	}
	return api.ListStoreNamespaces200JSONResponse{Namespaces: ns}, nil
}

func toAPIItem(it store.Item) api.StoreItem {
	return api.StoreItem{Namespace: it.Namespace, Key: it.Key, Value: it.Value, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, Score: it.Score}
}
