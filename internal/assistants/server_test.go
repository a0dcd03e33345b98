package assistants_test

import (
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/assistants"
	"agentserver/internal/testutil"
)

func TestSystemAssistantsAndAgents(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	echoID := assistants.SystemID("echo").String()
	for _, ref := range []string{echoID, "echo"} {
		a := s.Must(200, "GET", "/assistants/"+ref, nil).Object(t)
		if a["assistant_id"] != echoID || a["graph_id"] != "echo" || a["name"] != "echo" || a["metadata"].(map[string]any)["created_by"] != "system" {
			t.Fatalf("GET /assistants/%s = %v", ref, a)
		}
	}
	found := s.Must(200, "POST", "/assistants/search", map[string]any{"graph_id": "echo"}).List(t)
	if len(found) != 1 || found[0].(map[string]any)["assistant_id"] != echoID {
		t.Fatalf("search by graph = %v", found)
	}
	schemas := s.Must(200, "GET", "/assistants/echo/schemas", nil).Object(t)
	for _, k := range []string{"input_schema", "output_schema", "state_schema", "config_schema", "context_schema"} {
		if _, ok := schemas[k].(map[string]any); !ok {
			t.Errorf("schemas.%s = %v", k, schemas[k])
		}
	}
	g := s.Must(200, "GET", "/assistants/echo/graph?xray=true", nil).Object(t)
	if len(g["nodes"].([]any)) != 3 || len(g["edges"].([]any)) != 2 {
		t.Fatalf("graph = %v", g)
	}
	s.Must(200, "GET", "/assistants/echo/graph?xray=2", nil)
	s.Must(422, "GET", "/assistants/echo/graph?xray=deep", nil)
	if sg := s.Must(200, "GET", "/assistants/echo/subgraphs?recurse=true", nil).Object(t); len(sg) != 0 {
		t.Fatalf("subgraphs = %v", sg)
	}
	s.Must(200, "GET", "/assistants/echo/subgraphs/some-ns", nil)

	agent := s.Must(200, "GET", "/agents/echo", nil).Object(t)
	if agent["agent_id"] != echoID || agent["name"] != "echo" || agent["capabilities"].(map[string]any)["ap.io.messages"] != true {
		t.Fatalf("agent = %v", agent)
	}
	as := s.Must(200, "GET", "/agents/"+echoID+"/schemas", nil).Object(t)
	if as["agent_id"] != echoID || as["input_schema"] == nil || as["output_schema"] == nil {
		t.Fatalf("agent schemas = %v", as)
	}
	agents := s.Must(200, "POST", "/agents/search", map[string]any{"name": "ech", "limit": 10}).List(t)
	if len(agents) != 1 {
		t.Fatalf("agents search = %v", agents)
	}
	s.Must(404, "GET", "/agents/missing-graph", nil)
	s.Must(404, "GET", "/assistants/"+uuid.NewString(), nil)
	s.Must(404, "GET", "/assistants/missing-graph/schemas", nil)
}

func TestAssistantCRUDAndVersions(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	a := s.Must(200, "POST", "/assistants", map[string]any{
		"graph_id": "echo", "name": "mine", "metadata": map[string]any{"team": "x"},
		"config": map[string]any{"configurable": map[string]any{"model": "m1"}, "tags": []string{"t"}}, "context": map[string]any{"c": 1},
	}).Object(t)
	id := a["assistant_id"].(string)
	if a["version"] != 1.0 || a["name"] != "mine" || a["config"].(map[string]any)["configurable"].(map[string]any)["model"] != "m1" {
		t.Fatalf("created = %v", a)
	}
	s.Must(409, "POST", "/assistants", map[string]any{"graph_id": "echo", "assistant_id": id})
	same := s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "assistant_id": id, "if_exists": "do_nothing", "name": "other"}).Object(t)
	if same["name"] != "mine" {
		t.Fatalf("do_nothing changed the assistant: %v", same)
	}
	s.Must(404, "POST", "/assistants", map[string]any{"graph_id": "no-such-graph"})
	s.Must(422, "POST", "/assistants", map[string]any{"name": "no graph"})

	p := s.Must(200, "PATCH", "/assistants/"+id, map[string]any{"metadata": map[string]any{"extra": true}, "name": "renamed"}).Object(t)
	if p["version"] != 2.0 || p["name"] != "renamed" || p["metadata"].(map[string]any)["team"] != "x" || p["metadata"].(map[string]any)["extra"] != true {
		t.Fatalf("patched = %v", p)
	}
	versions := s.Must(200, "POST", "/assistants/"+id+"/versions", map[string]any{}).List(t)
	if len(versions) != 2 || versions[0].(map[string]any)["version"] != 2.0 {
		t.Fatalf("versions = %v", versions)
	}
	back := s.Must(200, "POST", "/assistants/"+id+"/latest", map[string]any{"version": 1}).Object(t)
	if back["version"] != 1.0 || back["name"] != "mine" {
		t.Fatalf("latest = %v", back)
	}
	s.Must(200, "POST", "/assistants/"+id+"/latest?version=2", nil)
	s.Must(404, "POST", "/assistants/"+id+"/latest", map[string]any{"version": 9})
	s.Must(422, "POST", "/assistants/"+id+"/latest", nil)

	cases := []struct {
		name string
		body map[string]any
		want int
	}{
		{"by name substring", map[string]any{"name": "RENAM"}, 1},
		{"by metadata", map[string]any{"metadata": map[string]any{"team": "x"}}, 1},
		{"by graph", map[string]any{"graph_id": "echo"}, 2},
		{"all sorted", map[string]any{"sort_by": "name", "sort_order": "asc"}, 3},
		{"page", map[string]any{"limit": 1, "offset": 1}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.Must(200, "POST", "/assistants/search", c.body)
			if got := len(r.List(t)); got != c.want {
				t.Fatalf("got %d, want %d: %s", got, c.want, r.Raw)
			}
			if r.Header.Get("X-Pagination-Total") == "" {
				t.Fatal("no X-Pagination-Total")
			}
		})
	}
	sel := s.Must(200, "POST", "/assistants/search", map[string]any{"select": []string{"assistant_id", "name"}, "limit": 1}).List(t)
	if m := sel[0].(map[string]any); len(m) != 2 {
		t.Fatalf("select = %v", m)
	}
	if n := s.Must(200, "POST", "/assistants/count", map[string]any{"graph_id": "echo"}).JSON; n != 2.0 {
		t.Fatalf("count = %v", n)
	}

	// delete_threads removes the threads created for the assistant.
	th := s.Must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"assistant_id": id}}).Object(t)
	keep := s.Must(200, "POST", "/threads", nil).Object(t)
	del := s.Must(200, "DELETE", "/assistants/"+id+"?delete_threads=true", nil).List(t)
	if len(del) != 1 || del[0] != id {
		t.Fatalf("delete = %v", del)
	}
	s.Must(404, "GET", "/assistants/"+id, nil)
	s.Must(404, "GET", "/threads/"+th["thread_id"].(string), nil)
	s.Must(200, "GET", "/threads/"+keep["thread_id"].(string), nil)
	s.Must(404, "DELETE", "/assistants/"+id, nil)
}
