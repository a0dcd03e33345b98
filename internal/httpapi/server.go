package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"agentserver/api"
	"agentserver/internal/assistants"
	"agentserver/internal/console"
	"agentserver/internal/crons"
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
	Crons      *crons.Service
	Log        *slog.Logger
	// Auth says who may call: the API key, bearer tokens, and the
	// Authorizer of their users. Public routes (the route table) answer
	// anyone.
	Auth Auth
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
	// NoMetrics leaves GET /metrics out (it is served on a listener of
	// its own).
	NoMetrics bool
	// Mounts are JSON-RPC protocol endpoints (MCP, A2A) by path prefix,
	// served beside the generated routes behind the same middlewares.
	Mounts map[string]http.Handler
	// Custom serves langgraph.json's http.app behind the server's routes
	// (nil: none).
	Custom *CustomRoutes
}

// Handler implements the generated strict server interface.
type Handler struct {
	db         *storage.DB
	graphs     *graphs.Registry
	threads    *threads.Service
	assistants *assistants.Service
	store      *store.Service
	runs       *runs.Service
	crons      *crons.Service
	onDelete   func(ctx context.Context, graphID string, values map[string]any)
	cancelSub  func(run uuid.UUID, toolCallID string) error
	stream     *protostream.Hub
	// validator checks requests against the contract; handlers of
	// requests it cannot route check fields with it.
	validator *requestValidator
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
	routes, err := newRouteIndex(doc)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(d.Log)
	e.JSONSerializer = checkedBodySerializer{}
	// The custom routes are known once every route of the server is
	// registered (below); the middlewares find them through cu.
	var cu *custom
	e.Use(observe(), accessLog(d.Log), cors(), authenticate(d.Auth, routes, &cu), customRoutes(&cu), markPeers(), lenientJSON(), bodyGuard(d.Limits), validator.middleware())
	h := &Handler{db: d.DB, graphs: d.Graphs, threads: d.Threads, assistants: d.Assistants, store: d.Store, runs: d.Runs, crons: d.Crons, onDelete: d.ThreadDeleted, cancelSub: d.CancelSubagent, stream: d.Stream, validator: validator}
	api.RegisterHandlers(e, api.NewStrictHandler(h, []api.StrictMiddlewareFunc{withRequestHeaders, releaseAfterDecode}))
	console.Register(e)
	if err := registerContractRoutes(e); err != nil {
		return nil, err
	}
	if h.stream != nil {
		registerProtocolRoutes(e, h)
	}
	if !d.NoMetrics {
		serveMetrics(e)
	}
	mount(e, d.Mounts)
	cu = newCustom(d.Custom, e, d.Limits.withDefaults().MaxBodyBytes)
	return e, nil
}

// customRoutes hands the requests no route of the server serves to the
// custom routes' app, when there is one (*cu, set once New registered
// every route).
func customRoutes(cu **custom) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if *cu == nil {
				return next(c)
			}
			return (*cu).handle(c, next)
		}
	}
}

// mount serves each handler at its prefix and below it. They are plain
// echo routes, not generated ones: MCP and A2A are JSON-RPC over one URL
// (the method is in the body), which the OpenAPI handler shape cannot
// express. The middlewares of e (API key, CORS, access log) apply to them.
func mount(e *echo.Echo, mounts map[string]http.Handler) {
	for prefix, h := range mounts {
		e.Any(prefix, echo.WrapHandler(h))
		e.Any(strings.TrimSuffix(prefix, "/")+"/*", echo.WrapHandler(h))
	}
}

// GetOk implements GET /ok.
func (h *Handler) GetOk(ctx context.Context, req api.GetOkRequestObject) (api.GetOkResponseObject, error) {
	check, err := parseBool(req.Params.CheckDb, false)
	if err != nil {
		return nil, err
	}
	if check {
		if err := h.runs.CheckDB(); err != nil {
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
		Flags:   map[string]any{"assistants": true, "crons": true, "langsmith": false, "store": true},
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
