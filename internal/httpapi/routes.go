package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"agentserver/api"

	"agentserver/internal/authz"
)

// access says who may call a route: anyone (public), only the operator
// (the API key), or an authenticated caller acting on a resource, whose
// service then authorises the action on the object named (authz).
type access struct {
	Public   bool
	Operator bool
	// Resource and Action name what the route does, as LangGraph's auth
	// handlers see it; an empty Resource is any authenticated caller.
	Resource, Action string
}

func public() access                        { return access{Public: true} }
func operator() access                      { return access{Operator: true} }
func authenticated() access                 { return access{} }
func on(resource, action string) access     { return access{Resource: resource, Action: action} }
func threadsAccess(action string) access    { return on(authz.Threads, action) }
func assistantsAccess(action string) access { return on(authz.Assistants, action) }

// operations is the access of every operation of api/openapi.yaml, by
// operationId. Runs are authorised through their thread: creating one is
// threads:create_run (stateless runs too), reading, joining or streaming
// one is threads:read, cancelling one threads:update.
var operations = map[string]access{
	"getOk":   public(),
	"getInfo": authenticated(),

	"createAssistant":                  assistantsAccess(authz.Create),
	"searchAssistants":                 assistantsAccess(authz.Search),
	"countAssistants":                  assistantsAccess(authz.Search),
	"getAssistant":                     assistantsAccess(authz.Read),
	"patchAssistant":                   assistantsAccess(authz.Update),
	"deleteAssistant":                  assistantsAccess(authz.Delete),
	"getAssistantGraph":                assistantsAccess(authz.Read),
	"getAssistantSchemas":              assistantsAccess(authz.Read),
	"getAssistantSubgraphs":            assistantsAccess(authz.Read),
	"getAssistantSubgraphsByNamespace": assistantsAccess(authz.Read),
	"listAssistantVersions":            assistantsAccess(authz.Read),
	"setLatestAssistantVersion":        assistantsAccess(authz.Update),
	"searchAgents":                     assistantsAccess(authz.Search),
	"getAgent":                         assistantsAccess(authz.Read),
	"getAgentSchemas":                  assistantsAccess(authz.Read),

	"createThread":                     threadsAccess(authz.Create),
	"searchThreads":                    threadsAccess(authz.Search),
	"countThreads":                     threadsAccess(authz.Search),
	"pruneThreads":                     threadsAccess(authz.Delete),
	"getThread":                        threadsAccess(authz.Read),
	"patchThread":                      threadsAccess(authz.Update),
	"deleteThread":                     threadsAccess(authz.Delete),
	"copyThread":                       threadsAccess(authz.Read),
	"getThreadState":                   threadsAccess(authz.Read),
	"updateThreadState":                threadsAccess(authz.Update),
	"patchThreadState":                 threadsAccess(authz.Update),
	"getThreadStateByCheckpointConfig": threadsAccess(authz.Read),
	"getThreadStateAtCheckpoint":       threadsAccess(authz.Read),
	"getThreadHistory":                 threadsAccess(authz.Read),
	"searchThreadHistory":              threadsAccess(authz.Read),
	"joinThreadStream":                 threadsAccess(authz.Read),

	"listThreadRuns":      threadsAccess(authz.Read),
	"createThreadRun":     threadsAccess(authz.CreateRun),
	"streamThreadRun":     threadsAccess(authz.CreateRun),
	"waitThreadRun":       threadsAccess(authz.CreateRun),
	"getThreadRun":        threadsAccess(authz.Read),
	"deleteThreadRun":     threadsAccess(authz.Delete),
	"joinThreadRun":       threadsAccess(authz.Read),
	"joinThreadRunStream": threadsAccess(authz.Read),
	"cancelThreadRun":     threadsAccess(authz.Update),
	"listSubagents":       threadsAccess(authz.Read),
	"getSubagent":         threadsAccess(authz.Read),
	"cancelSubagent":      threadsAccess(authz.Update),
	"createRun":           threadsAccess(authz.CreateRun),
	"streamRun":           threadsAccess(authz.CreateRun),
	"waitRun":             threadsAccess(authz.CreateRun),
	"createRunBatch":      threadsAccess(authz.CreateRun),
	"cancelRuns":          threadsAccess(authz.Update),
	"searchRuns":          threadsAccess(authz.Search),
	"getRun":              threadsAccess(authz.Read),
	"deleteRun":           threadsAccess(authz.Delete),
	"waitRunById":         threadsAccess(authz.Read),
	"joinRunStream":       threadsAccess(authz.Read),
	"cancelRun":           threadsAccess(authz.Update),

	"createThreadCron": on(authz.Crons, authz.Create),
	"createCron":       on(authz.Crons, authz.Create),
	"searchCrons":      on(authz.Crons, authz.Search),
	"countCrons":       on(authz.Crons, authz.Search),
	"getCron":          on(authz.Crons, authz.Read),
	"updateCron":       on(authz.Crons, authz.Update),
	"deleteCron":       on(authz.Crons, authz.Delete),

	"putStoreItem":        on(authz.Store, authz.Put),
	"deleteStoreItem":     on(authz.Store, authz.Delete),
	"getStoreItem":        on(authz.Store, authz.Get),
	"searchStoreItems":    on(authz.Store, authz.Search),
	"listStoreNamespaces": on(authz.Store, authz.ListNamespaces),
}

// otherRoutes is the access of the routes not in api/openapi.yaml, by
// "METHOD path" as echo registers them ("*" for any method).
var otherRoutes = map[string]access{
	"GET /openapi.json": public(),
	"GET /docs":         public(),
	// The console's files hold no data; its API calls are the routes above.
	"GET /":     public(),
	"GET /ui":   public(),
	"GET /ui/*": public(),
	// Aggregates over every user's runs.
	"GET /metrics": operator(),
	// The thread-centric streaming protocol (SSE, WebSocket, commands).
	"POST /threads/:thread_id/stream/events": threadsAccess(authz.Read),
	"GET /threads/:thread_id/stream/events":  threadsAccess(authz.Read),
	"POST /threads/:thread_id/commands":      threadsAccess(authz.Update),
	// JSON-RPC endpoints: they act on assistants, threads and runs
	// through the same services, as the caller (each call is authorised
	// and filtered there: a user's tools are the assistants they may
	// read, their tasks the runs of their threads).
	"* /mcp":   authenticated(),
	"* /mcp/*": authenticated(),
	"* /a2a":   authenticated(),
	"* /a2a/*": authenticated(),
	// An agent card describes an assistant (A2A): shown to callers who may
	// read it (assistants:read, in the service).
	"* /.well-known/agent-card.json":   authenticated(),
	"* /.well-known/agent-card.json/*": authenticated(),
}

// routeIndex finds the access of a routed request by method and echo path.
type routeIndex map[string]access

var specParam = regexp.MustCompile(`\{([^}]+)\}`)

// newRouteIndex joins operations (through the spec's paths) and
// otherRoutes. An operation of the spec without an entry is an error: the
// server does not start with a route nobody decided about.
func newRouteIndex(doc *openapi3.T) (routeIndex, error) {
	idx := routeIndex{}
	for k, a := range otherRoutes {
		idx[k] = a
	}
	for p, item := range doc.Paths.Map() {
		echoPath := specParam.ReplaceAllString(p, ":$1")
		for method, op := range item.Operations() {
			a, ok := operations[lowerFirst(op.OperationID)]
			if !ok {
				return nil, fmt.Errorf("route %s %s (operation %q) has no access entry in httpapi's route table", method, p, op.OperationID)
			}
			idx[method+" "+echoPath] = a
		}
	}
	return idx, nil
}

// lowerFirst undoes the capital the generator gives operation ids.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// lookup returns the access of a route; ok is false for a route without
// an entry.
func (idx routeIndex) lookup(method, path string) (access, bool) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if a, ok := idx[method+" "+path]; ok {
		return a, true
	}
	a, ok := idx["* "+path]
	return a, ok
}

// Unlisted returns the routes registered on e ("METHOD path") that the
// route table does not list: a test keeps it empty, so that no route is
// served without a decision on who may call it.
func Unlisted(e *echo.Echo) ([]string, error) {
	doc, err := api.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	idx, err := newRouteIndex(doc)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rt := range e.Routes() {
		if rt.Method == echo.RouteNotFound {
			continue
		}
		if _, ok := idx.lookup(rt.Method, rt.Path); !ok {
			out = append(out, rt.Method+" "+rt.Path)
		}
	}
	sort.Strings(out)
	return out, nil
}
