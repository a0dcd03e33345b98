package httpapi

import (
	"context"
	"strconv"

	"agentserver/api"
	"agentserver/internal/assistants"
	"agentserver/internal/storage"
)

// CreateAssistant implements POST /assistants.
func (h *Handler) CreateAssistant(ctx context.Context, req api.CreateAssistantRequestObject) (api.CreateAssistantResponseObject, error) {
	if req.Body == nil {
		return nil, invalidf("request body is required")
	}
	b := req.Body
	p := assistants.CreateParams{
		GraphID: b.GraphId, AssistantID: b.AssistantId, Config: configMap(b.Config),
		Context: b.Context, Metadata: b.Metadata, Description: b.Description,
	}
	if b.IfExists != nil {
		p.IfExists = string(*b.IfExists)
	}
	if b.Name != nil {
		p.Name = *b.Name
	}
	a, err := h.assistants.Create(ctx, p)
	if err != nil {
		return nil, err
	}
	return api.CreateAssistant200JSONResponse(toAPIAssistant(a)), nil
}

// GetAssistant implements GET /assistants/{assistant_id}.
func (h *Handler) GetAssistant(ctx context.Context, req api.GetAssistantRequestObject) (api.GetAssistantResponseObject, error) {
	a, err := h.assistants.Get(ctx, req.AssistantId)
	if err != nil {
		return nil, err
	}
	return api.GetAssistant200JSONResponse(toAPIAssistant(a)), nil
}

// PatchAssistant implements PATCH /assistants/{assistant_id}; it writes a new version.
func (h *Handler) PatchAssistant(ctx context.Context, req api.PatchAssistantRequestObject) (api.PatchAssistantResponseObject, error) {
	var p assistants.PatchParams
	if b := req.Body; b != nil {
		p = assistants.PatchParams{GraphID: b.GraphId, Context: b.Context, Metadata: b.Metadata, Name: b.Name, Description: b.Description}
		if b.Config != nil {
			p.Config = configMap(b.Config)
		}
	}
	a, err := h.assistants.Patch(ctx, req.AssistantId, p)
	if err != nil {
		return nil, err
	}
	return api.PatchAssistant200JSONResponse(toAPIAssistant(a)), nil
}

// DeleteAssistant implements DELETE /assistants/{assistant_id}; with
// delete_threads it also deletes the threads whose metadata names it.
func (h *Handler) DeleteAssistant(ctx context.Context, req api.DeleteAssistantRequestObject) (api.DeleteAssistantResponseObject, error) {
	withThreads, err := parseBool(req.Params.DeleteThreads, false)
	if err != nil {
		return nil, err
	}
	id, err := h.assistants.Delete(ctx, req.AssistantId)
	if err != nil {
		return nil, err
	}
	if withThreads {
		owned, _, err := h.threads.Search(ctx, storage.ThreadQuery{Metadata: map[string]any{"assistant_id": id.String()}})
		if err != nil {
			return nil, err
		}
		for _, th := range owned {
			if err := h.deleteThread(ctx, th.ThreadID); err != nil {
				return nil, err
			}
		}
	}
	return api.DeleteAssistant200JSONResponse{id.String()}, nil
}

// SearchAssistants implements POST /assistants/search.
func (h *Handler) SearchAssistants(ctx context.Context, req api.SearchAssistantsRequestObject) (api.SearchAssistantsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.AssistantSearchRequest{}
	}
	q := assistants.Query{Metadata: b.Metadata, Limit: intOr(b.Limit, 10), Offset: intOr(b.Offset, 0)}
	q.GraphID = deref(b.GraphId)
	q.Name = deref(b.Name)
	if b.SortBy != nil {
		q.SortBy = string(*b.SortBy)
	}
	if b.SortOrder != nil {
		q.SortOrder = string(*b.SortOrder)
	}
	if err := checkSelect(b.Select, assistantFields); err != nil {
		return nil, err
	}
	list, total, err := h.assistants.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]api.Assistant, len(list))
	for i, a := range list {
		out[i] = toAPIAssistant(a)
	}
	return selectedList[api.Assistant]{items: out, fields: b.Select, page: pagination(q.Offset, q.Limit, len(out), total)}, nil
}

var assistantFields = []string{"assistant_id", "graph_id", "config", "context", "created_at", "updated_at", "metadata", "version", "name", "description"}

// CountAssistants implements POST /assistants/count.
func (h *Handler) CountAssistants(ctx context.Context, req api.CountAssistantsRequestObject) (api.CountAssistantsResponseObject, error) {
	var q assistants.Query
	if b := req.Body; b != nil {
		q = assistants.Query{GraphID: deref(b.GraphId), Name: deref(b.Name), Metadata: b.Metadata}
	}
	n, err := h.assistants.Count(ctx, q)
	if err != nil {
		return nil, err
	}
	return api.CountAssistants200JSONResponse(n), nil
}

// ListAssistantVersions implements POST /assistants/{assistant_id}/versions.
func (h *Handler) ListAssistantVersions(ctx context.Context, req api.ListAssistantVersionsRequestObject) (api.ListAssistantVersionsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.AssistantVersionsRequest{}
	}
	limit, offset := intOr(b.Limit, 10), intOr(b.Offset, 0)
	list, total, err := h.assistants.Versions(ctx, req.AssistantId, b.Metadata, limit, offset)
	if err != nil {
		return nil, err
	}
	out := make([]api.Assistant, len(list))
	for i, a := range list {
		out[i] = toAPIAssistant(a)
	}
	p := pagination(offset, limit, len(out), total)
	return api.ListAssistantVersions200JSONResponse{Body: out, Headers: api.ListAssistantVersions200ResponseHeaders{XPaginationTotal: &p.total, XPaginationNext: p.nextPtr()}}, nil
}

// SetLatestAssistantVersion implements POST /assistants/{assistant_id}/latest.
// The version comes from the JSON body (what the SDKs send) or the query.
func (h *Handler) SetLatestAssistantVersion(ctx context.Context, req api.SetLatestAssistantVersionRequestObject) (api.SetLatestAssistantVersionResponseObject, error) {
	version := req.Params.Version
	if req.Body != nil && req.Body.Version != nil {
		version = req.Body.Version
	}
	if version == nil {
		return nil, invalidf("version is required (JSON body {\"version\": n} or query ?version=n)")
	}
	a, err := h.assistants.SetLatest(ctx, req.AssistantId, *version)
	if err != nil {
		return nil, err
	}
	return api.SetLatestAssistantVersion200JSONResponse(toAPIAssistant(a)), nil
}

// GetAssistantGraph implements GET /assistants/{assistant_id}/graph.
func (h *Handler) GetAssistantGraph(ctx context.Context, req api.GetAssistantGraphRequestObject) (api.GetAssistantGraphResponseObject, error) {
	xray, err := parseXray(req.Params.Xray)
	if err != nil {
		return nil, err
	}
	g, err := h.assistants.Graph(ctx, req.AssistantId, xray)
	if err != nil {
		return nil, err
	}
	out := api.Graph{Nodes: make([]api.GraphNode, len(g.Nodes)), Edges: make([]api.GraphEdge, len(g.Edges))}
	for i, n := range g.Nodes {
		out.Nodes[i] = api.GraphNode{Id: n.ID, Data: n.Data, Metadata: n.Meta}
		if n.Type != "" {
			typ := n.Type
			out.Nodes[i].Type = &typ
		}
	}
	for i, e := range g.Edges {
		out.Edges[i] = api.GraphEdge{Source: e.Source, Target: e.Target, Data: e.Data}
		if e.Conditional {
			c := true
			out.Edges[i].Conditional = &c
		}
	}
	return api.GetAssistantGraph200JSONResponse(out), nil
}

// parseXray reads xray: true (all levels, -1), false or absent (0), or a depth.
func parseXray(p *string) (int, error) {
	if p == nil || *p == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(*p); err == nil && n >= 0 {
		return n, nil
	}
	b, err := parseBool(p, false)
	if err != nil {
		return 0, invalidf("xray must be a boolean or a non-negative depth")
	}
	if b {
		return -1, nil
	}
	return 0, nil
}

// GetAssistantSchemas implements GET /assistants/{assistant_id}/schemas.
func (h *Handler) GetAssistantSchemas(ctx context.Context, req api.GetAssistantSchemasRequestObject) (api.GetAssistantSchemasResponseObject, error) {
	sc, err := h.assistants.Schemas(ctx, req.AssistantId)
	if err != nil {
		return nil, err
	}
	return api.GetAssistantSchemas200JSONResponse(toAPISchema(sc)), nil
}

// GetAssistantSubgraphs implements GET /assistants/{assistant_id}/subgraphs.
func (h *Handler) GetAssistantSubgraphs(ctx context.Context, req api.GetAssistantSubgraphsRequestObject) (api.GetAssistantSubgraphsResponseObject, error) {
	out, err := h.subgraphs(ctx, req.AssistantId, "", req.Params.Recurse)
	if err != nil {
		return nil, err
	}
	return api.GetAssistantSubgraphs200JSONResponse(out), nil
}

// GetAssistantSubgraphsByNamespace implements GET /assistants/{assistant_id}/subgraphs/{namespace}.
func (h *Handler) GetAssistantSubgraphsByNamespace(ctx context.Context, req api.GetAssistantSubgraphsByNamespaceRequestObject) (api.GetAssistantSubgraphsByNamespaceResponseObject, error) {
	out, err := h.subgraphs(ctx, req.AssistantId, req.Namespace, req.Params.Recurse)
	if err != nil {
		return nil, err
	}
	return api.GetAssistantSubgraphsByNamespace200JSONResponse(out), nil
}

func (h *Handler) subgraphs(ctx context.Context, ref, namespace string, recurseParam *string) (api.Subgraphs, error) {
	recurse, err := parseBool(recurseParam, false)
	if err != nil {
		return nil, err
	}
	m, err := h.assistants.Subgraphs(ctx, ref, namespace, recurse)
	if err != nil {
		return nil, err
	}
	out := api.Subgraphs{}
	for ns, sc := range m {
		out[ns] = toAPISchema(sc)
	}
	return out, nil
}

// SearchAgents implements the Agent Protocol's POST /agents/search.
func (h *Handler) SearchAgents(ctx context.Context, req api.SearchAgentsRequestObject) (api.SearchAgentsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.AgentSearchRequest{}
	}
	q := assistants.AgentQuery{Name: deref(b.Name), Metadata: b.Metadata, Limit: intOr(b.Limit, 10), Offset: intOr(b.Offset, 0)}
	list, total, err := h.assistants.SearchAgents(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]api.Agent, len(list))
	for i, a := range list {
		out[i] = toAPIAgent(a)
	}
	p := pagination(q.Offset, q.Limit, len(out), total)
	return api.SearchAgents200JSONResponse{Body: out, Headers: api.SearchAgents200ResponseHeaders{XPaginationTotal: &p.total, XPaginationNext: p.nextPtr()}}, nil
}

// GetAgent implements the Agent Protocol's GET /agents/{agent_id}.
func (h *Handler) GetAgent(ctx context.Context, req api.GetAgentRequestObject) (api.GetAgentResponseObject, error) {
	a, err := h.assistants.GetAgent(ctx, req.AgentId)
	if err != nil {
		return nil, err
	}
	return api.GetAgent200JSONResponse(toAPIAgent(a)), nil
}

// GetAgentSchemas implements the Agent Protocol's GET /agents/{agent_id}/schemas.
func (h *Handler) GetAgentSchemas(ctx context.Context, req api.GetAgentSchemasRequestObject) (api.GetAgentSchemasResponseObject, error) {
	sc, err := h.assistants.AgentSchemas(ctx, req.AgentId)
	if err != nil {
		return nil, err
	}
	return api.GetAgentSchemas200JSONResponse{
		AgentId: sc.AgentID, InputSchema: sc.InputSchema, OutputSchema: sc.OutputSchema,
		StateSchema: sc.StateSchema, ConfigSchema: sc.ConfigSchema,
	}, nil
}

func toAPIAssistant(a assistants.Assistant) api.Assistant {
	out := api.Assistant{
		AssistantId: a.AssistantID, GraphId: a.GraphID, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		Metadata: orEmpty(a.Metadata), Context: orEmpty(a.Context), Version: a.Version, Name: a.Name, Description: a.Description,
		Config: apiConfig(a.Config),
	}
	return out
}

func toAPIAgent(a assistants.Agent) api.Agent {
	caps := make(map[string]any, len(a.Capabilities))
	for k, v := range a.Capabilities {
		caps[k] = v
	}
	return api.Agent{AgentId: a.AgentID, Name: a.Name, Description: a.Description, Metadata: orEmpty(a.Metadata), Capabilities: caps}
}

func toAPISchema(sc assistants.GraphSchema) api.GraphSchema {
	return api.GraphSchema{
		GraphId: sc.GraphID, InputSchema: sc.InputSchema, OutputSchema: sc.OutputSchema,
		StateSchema: sc.StateSchema, ConfigSchema: sc.ConfigSchema, ContextSchema: sc.ContextSchema,
	}
}

// configMap flattens a generated Config back to the generic map we store.
func configMap(c *api.Config) map[string]any {
	if c == nil {
		return nil
	}
	m := make(map[string]any, len(c.AdditionalProperties)+3)
	for k, v := range c.AdditionalProperties {
		m[k] = v
	}
	if c.Configurable != nil {
		m["configurable"] = c.Configurable
	}
	if c.RecursionLimit != nil {
		m["recursion_limit"] = *c.RecursionLimit
	}
	if c.Tags != nil {
		m["tags"] = c.Tags
	}
	return m
}

// apiConfig is the inverse of configMap, for responses.
func apiConfig(m map[string]any) api.Config {
	c := api.Config{AdditionalProperties: map[string]any{}}
	for k, v := range m {
		c.AdditionalProperties[k] = v
	}
	return c
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
