package assistants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/graphs"
	"agentserver/internal/storage"
	"agentserver/internal/testutil/testdb"
)

// newTestService opens a fresh database in a temporary directory and serves
// echo under each of graphIDs. Its clock starts at a fixed instant and moves
// one second per reading, so creation order is sort order.
func newTestService(t *testing.T, graphIDs ...string) (*Service, *storage.DB) {
	t.Helper()
	db := testdb.OpenWith(t, storage.Options{})
	return newServiceOn(t, db, graphIDs...), db
}

func newServiceOn(t *testing.T, db *storage.DB, graphIDs ...string) *Service {
	t.Helper()
	var defs []*graphs.Definition
	for _, id := range graphIDs {
		d := graphs.Echo()
		d.ID = id
		defs = append(defs, d)
	}
	reg, err := graphs.NewRegistry(defs...)
	if err != nil {
		t.Fatal(err)
	}
	s := New(db, reg)
	var mu sync.Mutex
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func mustCreate(t *testing.T, s *Service, p CreateParams) Assistant {
	t.Helper()
	a, err := s.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("create %+v: %v", p, err)
	}
	return a
}

func TestSystemIDKnownVector(t *testing.T) {
	want := uuid.MustParse("eb6db400-e3c8-5d06-a834-015cb89efe69")
	if got := SystemID("chat"); got != want {
		t.Fatalf("SystemID(chat) = %s, want %s", got, want)
	}
}

func TestEnsureSystemAssistants(t *testing.T) {
	ctx := context.Background()
	s, db := newTestService(t, "chat", "echo")
	if err := s.EnsureSystemAssistants(ctx); err != nil {
		t.Fatal(err)
	}
	chat, err := s.Get(ctx, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if chat.AssistantID.String() != "eb6db400-e3c8-5d06-a834-015cb89efe69" || chat.GraphID != "chat" ||
		chat.Name != "chat" || chat.Version != 1 || chat.Description != nil ||
		!reflect.DeepEqual(chat.Metadata, map[string]any{"created_by": "system"}) ||
		chat.Config == nil || len(chat.Config) != 0 || chat.Context == nil || len(chat.Context) != 0 {
		t.Fatalf("system assistant = %+v", chat)
	}
	byID, err := s.Get(ctx, chat.AssistantID.String())
	if err != nil || !byID.CreatedAt.Equal(chat.CreatedAt) {
		t.Fatalf("get by id = %+v, %v", byID, err)
	}

	// A client edit survives a restart; a deleted system assistant returns.
	if _, err := s.Patch(ctx, "chat", PatchParams{Name: ptr("renamed")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	restarted := newServiceOn(t, db, "chat", "echo")
	for i := 0; i < 2; i++ {
		if err := restarted.EnsureSystemAssistants(ctx); err != nil {
			t.Fatal(err)
		}
	}
	chat, err = restarted.Get(ctx, "chat")
	if err != nil || chat.Name != "renamed" || chat.Version != 2 {
		t.Fatalf("after restart chat = %+v, %v", chat, err)
	}
	if _, err := restarted.Get(ctx, "echo"); err != nil {
		t.Fatalf("echo not recreated: %v", err)
	}
	if n, err := restarted.Count(ctx, Query{}); err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2", n, err)
	}
	vs, total, err := restarted.Versions(ctx, "chat", nil, 0, 0)
	if err != nil || total != 2 || len(vs) != 2 {
		t.Fatalf("chat versions = %d (total %d), %v", len(vs), total, err)
	}
}

func TestResolve(t *testing.T) {
	s, _ := newTestService(t, "echo")
	id := uuid.New()
	for _, tc := range []struct {
		ref     string
		want    uuid.UUID
		wantErr error
	}{
		{id.String(), id, nil},
		{"echo", SystemID("echo"), nil},
		{"nope", uuid.Nil, errdefs.ErrNotFound},
		{"", uuid.Nil, errdefs.ErrNotFound},
	} {
		got, err := s.Resolve(tc.ref)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) || got != tc.want {
			t.Errorf("Resolve(%q) = %s, %v; want %s, %v", tc.ref, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo")
	fixed := uuid.MustParse("0190c3a4-0000-7000-8000-000000000001")

	a := mustCreate(t, s, CreateParams{GraphID: "echo"})
	if a.Name != DefaultName || a.Version != 1 || a.AssistantID == uuid.Nil ||
		a.Config == nil || a.Context == nil || a.Metadata == nil || !a.CreatedAt.Equal(a.UpdatedAt) {
		t.Fatalf("defaults = %+v", a)
	}
	got, err := s.Get(ctx, a.AssistantID.String())
	if err != nil || got.Name != DefaultName {
		t.Fatalf("get = %+v, %v", got, err)
	}

	meta := map[string]any{"owner": "me"}
	b := mustCreate(t, s, CreateParams{
		GraphID: "echo", AssistantID: &fixed, Name: "bot", Description: ptr("helps"),
		Config: map[string]any{"recursion_limit": float64(5)}, Context: map[string]any{"k": "v"}, Metadata: meta,
	})
	meta["owner"] = "mutated" // the stored record does not alias the caller's map
	if b.AssistantID != fixed || b.Name != "bot" || *b.Description != "helps" || b.Metadata["owner"] != "me" {
		t.Fatalf("created = %+v", b)
	}
	got, err = s.Get(ctx, fixed.String())
	if err != nil || got.Metadata["owner"] != "me" || got.Config["recursion_limit"] != float64(5) || got.Context["k"] != "v" {
		t.Fatalf("stored = %+v, %v", got, err)
	}
	vs, _, err := s.Versions(ctx, fixed.String(), nil, 0, 0)
	if err != nil || len(vs) != 1 || vs[0].Version != 1 || vs[0].Name != "bot" {
		t.Fatalf("versions = %+v, %v", vs, err)
	}

	same, err := s.Create(ctx, CreateParams{GraphID: "echo", AssistantID: &fixed, IfExists: "do_nothing", Name: "other"})
	if err != nil || same.Name != "bot" || !same.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("do_nothing = %+v, %v", same, err)
	}

	for _, tc := range []struct {
		name string
		p    CreateParams
		want error
	}{
		{"raise", CreateParams{GraphID: "echo", AssistantID: &fixed}, errdefs.ErrConflict},
		{"explicit raise", CreateParams{GraphID: "echo", AssistantID: &fixed, IfExists: "raise"}, errdefs.ErrConflict},
		{"unknown graph", CreateParams{GraphID: "nope"}, errdefs.ErrNotFound},
		{"missing graph", CreateParams{}, errdefs.ErrInvalid},
		{"bad if_exists", CreateParams{GraphID: "echo", IfExists: "update"}, errdefs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Create(ctx, tc.p); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if n, _ := s.Count(ctx, Query{}); n != 2 {
		t.Fatalf("count after failed creates = %d, want 2", n)
	}
}

func TestGetNotFound(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo")
	// "echo" is a served graph but its system assistant was never ensured.
	for _, ref := range []string{"x", uuid.NewString(), "echo"} {
		_, err := s.Get(ctx, ref)
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("Get(%q): err = %v, want ErrNotFound", ref, err)
		}
		if want := fmt.Sprintf("assistant %q", ref); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, ref)
		}
	}
}

func TestPatchVersionsAndSetLatest(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo", "other")
	a := mustCreate(t, s, CreateParams{
		GraphID: "echo", Name: "v1", Metadata: map[string]any{"a": "1", "b": "1"},
		Config: map[string]any{"tags": []any{"x"}},
	})
	ref := a.AssistantID.String()

	p, err := s.Patch(ctx, ref, PatchParams{Metadata: map[string]any{"b": "2", "c": "2"}, Name: ptr("v2"), Description: ptr("d2")})
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != 2 || p.Name != "v2" || *p.Description != "d2" ||
		!reflect.DeepEqual(p.Metadata, map[string]any{"a": "1", "b": "2", "c": "2"}) ||
		!reflect.DeepEqual(p.Config, a.Config) || !p.CreatedAt.Equal(a.CreatedAt) || !p.UpdatedAt.After(a.UpdatedAt) {
		t.Fatalf("patched = %+v", p)
	}
	cur, err := s.Get(ctx, ref)
	if err != nil || cur.Version != 2 || cur.Name != "v2" {
		t.Fatalf("current = %+v, %v", cur, err)
	}

	p3, err := s.Patch(ctx, ref, PatchParams{GraphID: ptr("other"), Config: map[string]any{}, Context: map[string]any{"c": true}})
	if err != nil {
		t.Fatal(err)
	}
	if p3.Version != 3 || p3.GraphID != "other" || len(p3.Config) != 0 || p3.Context["c"] != true || p3.Name != "v2" {
		t.Fatalf("patch 3 = %+v", p3)
	}

	vs, total, err := s.Versions(ctx, ref, nil, 0, 0)
	if err != nil || total != 3 {
		t.Fatalf("versions total = %d, %v", total, err)
	}
	if got := versionsOf(vs); !reflect.DeepEqual(got, []int{3, 2, 1}) {
		t.Fatalf("versions = %v, want newest first", got)
	}
	if vs[2].Name != "v1" || vs[1].Name != "v2" {
		t.Fatalf("version contents changed: %+v", vs)
	}
	vs, total, err = s.Versions(ctx, ref, map[string]any{"c": "2"}, 1, 1)
	if err != nil || total != 2 || !reflect.DeepEqual(versionsOf(vs), []int{2}) {
		t.Fatalf("filtered versions = %v (total %d), %v", versionsOf(vs), total, err)
	}

	// Back to version 1: content of v1, created_at kept, updated_at bumped.
	l, err := s.SetLatest(ctx, ref, 1)
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != 1 || l.Name != "v1" || l.GraphID != "echo" || l.Description != nil ||
		!reflect.DeepEqual(l.Metadata, a.Metadata) || !l.CreatedAt.Equal(a.CreatedAt) || !l.UpdatedAt.After(p3.UpdatedAt) {
		t.Fatalf("set latest = %+v", l)
	}
	if cur, _ := s.Get(ctx, ref); cur.Version != 1 || cur.Name != "v1" {
		t.Fatalf("current after set latest = %+v", cur)
	}
	// The next patch builds on the current record but numbers after the highest.
	p4, err := s.Patch(ctx, ref, PatchParams{Metadata: map[string]any{"d": "4"}})
	if err != nil {
		t.Fatal(err)
	}
	if p4.Version != 4 || p4.Name != "v1" || !reflect.DeepEqual(p4.Metadata, map[string]any{"a": "1", "b": "1", "d": "4"}) {
		t.Fatalf("patch after set latest = %+v", p4)
	}

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"set latest missing version", func() error { _, err := s.SetLatest(ctx, ref, 9); return err }(), errdefs.ErrNotFound},
		{"set latest version 0", func() error { _, err := s.SetLatest(ctx, ref, 0); return err }(), errdefs.ErrNotFound},
		{"set latest missing assistant", func() error { _, err := s.SetLatest(ctx, uuid.NewString(), 1); return err }(), errdefs.ErrNotFound},
		{"patch missing assistant", func() error { _, err := s.Patch(ctx, uuid.NewString(), PatchParams{}); return err }(), errdefs.ErrNotFound},
		{"patch unknown graph", func() error { _, err := s.Patch(ctx, ref, PatchParams{GraphID: ptr("nope")}); return err }(), errdefs.ErrNotFound},
		{"versions missing assistant", func() error { _, _, err := s.Versions(ctx, uuid.NewString(), nil, 0, 0); return err }(), errdefs.ErrNotFound},
		{"versions bad limit", func() error { _, _, err := s.Versions(ctx, ref, nil, -1, 0); return err }(), errdefs.ErrInvalid},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if cur, _ := s.Get(ctx, ref); cur.Version != 4 {
		t.Fatalf("failed calls changed the assistant: %+v", cur)
	}
}

func versionsOf(as []Assistant) []int {
	out := []int{}
	for _, a := range as {
		out = append(out, a.Version)
	}
	return out
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo")
	a := mustCreate(t, s, CreateParams{GraphID: "echo"})
	if _, err := s.Patch(ctx, a.AssistantID.String(), PatchParams{Name: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	id, err := s.Delete(ctx, a.AssistantID.String())
	if err != nil || id != a.AssistantID {
		t.Fatalf("delete = %s, %v", id, err)
	}
	if _, err := s.Get(ctx, a.AssistantID.String()); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("get after delete: err = %v", err)
	}
	if _, _, err := s.Versions(ctx, a.AssistantID.String(), nil, 0, 0); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("versions after delete: err = %v", err)
	}
	if _, err := s.Delete(ctx, a.AssistantID.String()); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("second delete: err = %v", err)
	}
	// The id can be reused from version 1.
	b := mustCreate(t, s, CreateParams{GraphID: "echo", AssistantID: &a.AssistantID})
	if b.Version != 1 {
		t.Fatalf("recreated = %+v", b)
	}
	if _, err := s.Delete(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("delete unknown name: err = %v", err)
	}
}

func TestSearchAndCount(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "alpha", "beta")
	// Created one second apart in this order: a0 … a4.
	specs := []struct {
		graph, name string
		meta        map[string]any
	}{
		{"alpha", "Research Bot", map[string]any{"team": "x", "tier": float64(1)}},
		{"beta", "writer", map[string]any{"team": "y"}},
		{"alpha", "RESEARCH helper", map[string]any{"team": "x", "tags": []any{"a", "b"}}},
		{"beta", "critic", map[string]any{}},
		{"alpha", "zeta", map[string]any{"team": "y", "tier": float64(2)}},
	}
	var ids []uuid.UUID
	for _, sp := range specs {
		ids = append(ids, mustCreate(t, s, CreateParams{GraphID: sp.graph, Name: sp.name, Metadata: sp.meta}).AssistantID)
	}
	// Touch a1 so that it is the most recently updated.
	if _, err := s.Patch(ctx, ids[1].String(), PatchParams{}); err != nil {
		t.Fatal(err)
	}
	byID := append([]uuid.UUID(nil), ids...)
	sortUUIDs(byID)

	for _, tc := range []struct {
		name  string
		q     Query
		want  []uuid.UUID
		total int
	}{
		{"default newest first", Query{}, []uuid.UUID{ids[4], ids[3], ids[2], ids[1], ids[0]}, 5},
		{"created asc", Query{SortOrder: "asc"}, ids, 5},
		{"graph", Query{GraphID: "beta"}, []uuid.UUID{ids[3], ids[1]}, 2},
		{"name substring any case", Query{Name: "research"}, []uuid.UUID{ids[2], ids[0]}, 2},
		{"metadata", Query{Metadata: map[string]any{"team": "x"}}, []uuid.UUID{ids[2], ids[0]}, 2},
		{"metadata number", Query{Metadata: map[string]any{"tier": float64(2)}}, []uuid.UUID{ids[4]}, 1},
		{"metadata array containment", Query{Metadata: map[string]any{"tags": []any{"b"}}}, []uuid.UUID{ids[2]}, 1},
		{"combined", Query{GraphID: "alpha", Metadata: map[string]any{"team": "y"}}, []uuid.UUID{ids[4]}, 1},
		{"no match", Query{Name: "nobody"}, []uuid.UUID{}, 0},
		{"name asc", Query{SortBy: "name", SortOrder: "asc"}, []uuid.UUID{ids[2], ids[0], ids[3], ids[1], ids[4]}, 5},
		{"graph asc ties by id", Query{SortBy: "graph_id", SortOrder: "ASC", Limit: 3}, ascOf(byID, ids[0], ids[2], ids[4]), 5},
		{"updated desc", Query{SortBy: "updated_at", Limit: 2}, []uuid.UUID{ids[1], ids[4]}, 5},
		{"assistant_id asc", Query{SortBy: "assistant_id", SortOrder: "asc"}, byID, 5},
		{"page", Query{Limit: 2, Offset: 1}, []uuid.UUID{ids[3], ids[2]}, 5},
		{"last page", Query{Limit: 2, Offset: 4}, []uuid.UUID{ids[0]}, 5},
		{"past end", Query{Offset: 10}, []uuid.UUID{}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, total, err := s.Search(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if total != tc.total || !reflect.DeepEqual(idsOf(got), tc.want) {
				t.Fatalf("got %v (total %d), want %v (total %d)", idsOf(got), total, tc.want, tc.total)
			}
			n, err := s.Count(ctx, tc.q)
			if err != nil || n != tc.total {
				t.Fatalf("count = %d, %v; want %d", n, err, tc.total)
			}
		})
	}

	for _, q := range []Query{
		{SortBy: "version"},
		{SortOrder: "sideways"},
		{Limit: -1},
		{Limit: MaxLimit + 1},
		{Offset: -1},
	} {
		if _, _, err := s.Search(ctx, q); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("search %+v: err = %v, want ErrInvalid", q, err)
		}
	}

	// The default page holds DefaultLimit assistants.
	for i := 0; i < DefaultLimit; i++ {
		mustCreate(t, s, CreateParams{GraphID: "alpha"})
	}
	page, total, err := s.Search(ctx, Query{})
	if err != nil || len(page) != DefaultLimit || total != 5+DefaultLimit {
		t.Fatalf("default page = %d (total %d), %v", len(page), total, err)
	}
}

// ascOf returns the given ids in the order they have in sorted.
func ascOf(sorted []uuid.UUID, ids ...uuid.UUID) []uuid.UUID {
	in := map[uuid.UUID]bool{}
	for _, id := range ids {
		in[id] = true
	}
	var out []uuid.UUID
	for _, id := range sorted {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}

func sortUUIDs(ids []uuid.UUID) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j].String() < ids[j-1].String(); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

func idsOf(as []Assistant) []uuid.UUID {
	out := []uuid.UUID{}
	for _, a := range as {
		out = append(out, a.AssistantID)
	}
	return out
}

func TestGraphSchemasSubgraphs(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo")
	if err := s.EnsureSystemAssistants(ctx); err != nil {
		t.Fatal(err)
	}
	echo := graphs.Echo()

	g, err := s.Graph(ctx, "echo", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.Nodes, echo.Nodes) || !reflect.DeepEqual(g.Edges, echo.Edges) {
		t.Fatalf("graph = %+v", g)
	}
	raw, _ := json.Marshal(g)
	var wire struct {
		Nodes []map[string]any `json:"nodes"`
		Edges []map[string]any `json:"edges"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil || len(wire.Nodes) != 3 || wire.Edges[0]["source"] != "__start__" {
		t.Fatalf("graph json = %s", raw)
	}

	sc, err := s.Schemas(ctx, SystemID("echo").String())
	if err != nil {
		t.Fatal(err)
	}
	if sc.GraphID != "echo" || !reflect.DeepEqual(sc.InputSchema, echo.InputSchema) ||
		!reflect.DeepEqual(sc.StateSchema, echo.StateSchema) || !reflect.DeepEqual(sc.ContextSchema, echo.ContextSchema) {
		t.Fatalf("schemas = %+v", sc)
	}
	sc.InputSchema["title"] = "mutated"
	if again, _ := s.Schemas(ctx, "echo"); again.InputSchema["title"] != "EchoInput" {
		t.Fatal("schemas alias the registry")
	}
	raw, _ = json.Marshal(sc)
	var keys map[string]any
	_ = json.Unmarshal(raw, &keys)
	for _, k := range []string{"graph_id", "input_schema", "output_schema", "state_schema", "config_schema", "context_schema"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("schemas json lacks %s: %s", k, raw)
		}
	}

	for _, ns := range []string{"", "child", "a|b"} {
		for _, recurse := range []bool{false, true} {
			sub, err := s.Subgraphs(ctx, "echo", ns, recurse)
			if err != nil || sub == nil || len(sub) != 0 {
				t.Fatalf("subgraphs(%q, %v) = %v, %v", ns, recurse, sub, err)
			}
		}
	}

	for name, err := range map[string]error{
		"graph":     func() error { _, err := s.Graph(ctx, "nope", 0); return err }(),
		"schemas":   func() error { _, err := s.Schemas(ctx, uuid.NewString()); return err }(),
		"subgraphs": func() error { _, err := s.Subgraphs(ctx, "nope", "", false); return err }(),
	} {
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
}

func TestAgents(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo")
	if err := s.EnsureSystemAssistants(ctx); err != nil {
		t.Fatal(err)
	}
	custom := mustCreate(t, s, CreateParams{GraphID: "echo", Name: "Helper", Description: ptr("mine"), Metadata: map[string]any{"team": "x"}})

	sys, err := s.GetAgent(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	wantCaps := map[string]bool{"ap.io.messages": true, "ap.io.streaming": true}
	if sys.AgentID != SystemID("echo").String() || sys.Name != "echo" || sys.Description == nil ||
		*sys.Description != graphs.Echo().Description || sys.Metadata["created_by"] != "system" ||
		!reflect.DeepEqual(sys.Capabilities, wantCaps) {
		t.Fatalf("system agent = %+v", sys)
	}
	got, err := s.GetAgent(ctx, custom.AssistantID.String())
	if err != nil || got.AgentID != custom.AssistantID.String() || *got.Description != "mine" {
		t.Fatalf("custom agent = %+v, %v", got, err)
	}
	raw, _ := json.Marshal(got)
	var wire map[string]any
	_ = json.Unmarshal(raw, &wire)
	for _, k := range []string{"agent_id", "name", "description", "metadata", "capabilities"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("agent json lacks %s: %s", k, raw)
		}
	}

	for _, tc := range []struct {
		name  string
		q     AgentQuery
		want  []string
		total int
	}{
		{"all newest first", AgentQuery{}, []string{custom.AssistantID.String(), sys.AgentID}, 2},
		{"name", AgentQuery{Name: "help"}, []string{custom.AssistantID.String()}, 1},
		{"metadata", AgentQuery{Metadata: map[string]any{"created_by": "system"}}, []string{sys.AgentID}, 1},
		{"page", AgentQuery{Limit: 1, Offset: 1}, []string{sys.AgentID}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agents, total, err := s.SearchAgents(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range agents {
				ids = append(ids, a.AgentID)
			}
			if total != tc.total || !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("got %v (total %d), want %v (total %d)", ids, total, tc.want, tc.total)
			}
		})
	}
	if _, _, err := s.SearchAgents(ctx, AgentQuery{Limit: -5}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("bad limit: err = %v", err)
	}

	as, err := s.AgentSchemas(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	echo := graphs.Echo()
	if as.AgentID != sys.AgentID || !reflect.DeepEqual(as.InputSchema, echo.InputSchema) ||
		!reflect.DeepEqual(as.OutputSchema, echo.OutputSchema) || !reflect.DeepEqual(as.ConfigSchema, echo.ConfigSchema) {
		t.Fatalf("agent schemas = %+v", as)
	}
	if _, err := s.GetAgent(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("unknown agent: err = %v", err)
	}
	if _, err := s.AgentSchemas(ctx, uuid.NewString()); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("unknown agent schemas: err = %v", err)
	}
}

func TestConcurrentPatchesNumberDistinctVersions(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestService(t, "echo")
	a := mustCreate(t, s, CreateParams{GraphID: "echo"})
	const n = 20
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			_, err := s.Patch(ctx, a.AssistantID.String(), PatchParams{Metadata: map[string]any{fmt.Sprint(i): true}})
			errs <- err
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	vs, total, err := s.Versions(ctx, a.AssistantID.String(), nil, MaxLimit, 0)
	if err != nil || total != n+1 {
		t.Fatalf("versions = %d, %v; want %d", total, err, n+1)
	}
	for i, v := range vs {
		if v.Version != n+1-i {
			t.Fatalf("versions = %v", versionsOf(vs))
		}
	}
	cur, _ := s.Get(ctx, a.AssistantID.String())
	if cur.Version != n+1 || len(cur.Metadata) != n {
		t.Fatalf("current = version %d with %d metadata keys", cur.Version, len(cur.Metadata))
	}
}
