package httpapi

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"agentserver/api"
	"agentserver/internal/assistants"
	"agentserver/internal/graphs"
	"agentserver/internal/protostream"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/store"
	"agentserver/internal/threads"
	"agentserver/internal/version"
)

// Deps are the services the HTTP layer calls.
type Deps struct {
	DB         *storage.DB
	Graphs     *graphs.Registry
	Threads    *threads.Service
	Assistants *assistants.Service
	Store      *store.Service
	Runs       *runs.Service
	Log        *slog.Logger
	// APIKey, when set, is required as x-api-key on every route but the
	// public ones (/ok, /openapi.json, /docs).
	APIKey string
	// ThreadDeleted is told about a thread (its graph and last values)
	// just before it is deleted.
	ThreadDeleted func(ctx context.Context, graphID string, values map[string]any)
	// CancelSubagent stops one running task-tool subagent of a run.
	CancelSubagent func(run uuid.UUID, toolCallID string) error
	// Limits bound request bodies.
	Limits Limits
	// Stream serves the thread-centric streaming protocol; nil: its
	// routes are not served.
	Stream *protostream.Hub
}

// Handler implements the generated strict server interface.
type Handler struct {
	db         *storage.DB
	graphs     *graphs.Registry
	threads    *threads.Service
	assistants *assistants.Service
	store      *store.Service
	runs       *runs.Service
	onDelete   func(ctx context.Context, graphID string, values map[string]any)
	cancelSub  func(run uuid.UUID, toolCallID string) error
	stream     *protostream.Hub
}

var _ api.StrictServerInterface = (*Handler)(nil)

// New returns the HTTP handler of the whole API: CORS, optional API-key
// auth, lenient body decoding, body limits, OpenAPI request validation,
// then the generated routes.
func New(d Deps) (*echo.Echo, error) {
	doc, err := api.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	validator, err := newRequestValidator(doc)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(d.Log)
	e.Use(accessLog(d.Log), cors(), apiKeyAuth(d.APIKey), lenientJSON(), bodyGuard(d.Limits), validator.middleware())
	h := &Handler{db: d.DB, graphs: d.Graphs, threads: d.Threads, assistants: d.Assistants, store: d.Store, runs: d.Runs, onDelete: d.ThreadDeleted, cancelSub: d.CancelSubagent, stream: d.Stream}
	api.RegisterHandlers(e, api.NewStrictHandler(h, []api.StrictMiddlewareFunc{withRequestHeaders}))
	if err := registerContractRoutes(e); err != nil {
		return nil, err
	}
	if h.stream != nil {
		registerProtocolRoutes(e, h)
	}
	return e, nil
}

// GetOk implements GET /ok.
func (h *Handler) GetOk(ctx context.Context, req api.GetOkRequestObject) (api.GetOkResponseObject, error) {
	check, err := parseBool(req.Params.CheckDb, false)
	if err != nil {
		return nil, err
	}
	if check {
		if err := h.db.Ping(); err != nil {
			return api.GetOk500JSONResponse{InternalErrorJSONResponse: api.InternalErrorJSONResponse(errorBody("storage unavailable: "+err.Error(), "unavailable"))}, nil
		}
	}
	return api.GetOk200JSONResponse{Ok: true}, nil
}

// GetInfo implements GET /info.
func (h *Handler) GetInfo(ctx context.Context, req api.GetInfoRequestObject) (api.GetInfoResponseObject, error) {
	build := version.Get()
	return api.GetInfo200JSONResponse{
		Version: &build.Version,
		Flags:   map[string]any{"assistants": true, "crons": false, "langsmith": false, "store": true},
		Metadata: map[string]any{
			"server":     "agentserver",
			"graphs":     h.graphs.IDs(),
			"commit":     build.Commit,
			"modified":   build.Modified,
			"go_version": build.GoVersion,
		},
	}, nil
}

func errorBody(msg, code string) api.ErrorResponse {
	return api.ErrorResponse{Detail: &msg, Message: &msg, Code: &code}
}
