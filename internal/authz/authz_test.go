package authz

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestFilterMatches(t *testing.T) {
	md := map[string]any{"owner": "alice", "team": "red", "tags": []any{"a", "b"}}
	for _, c := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"nil filter", nil, true},
		{"equality", Filter{"owner": "alice"}, true},
		{"equality, other value", Filter{"owner": "bob"}, false},
		{"$eq", Filter{"owner": map[string]any{"$eq": "alice"}}, true},
		{"$eq, other value", Filter{"owner": map[string]any{"$eq": "bob"}}, false},
		{"$contains one", Filter{"tags": map[string]any{"$contains": "a"}}, true},
		{"$contains missing", Filter{"tags": map[string]any{"$contains": "z"}}, false},
		{"$contains a list", Filter{"tags": map[string]any{"$contains": []any{"a", "b"}}}, true},
		{"$contains a list, one missing", Filter{"tags": map[string]any{"$contains": []any{"a", "z"}}}, false},
		{"$contains on a string", Filter{"owner": map[string]any{"$contains": "alice"}}, false},
		{"keys ANDed, all hold", Filter{"owner": "alice", "team": map[string]any{"$eq": "red"}}, true},
		{"keys ANDed, one fails", Filter{"owner": "alice", "team": "blue"}, false},
		{"absent key", Filter{"region": "eu"}, false},
		{"unknown operator", Filter{"owner": map[string]any{"$ne": "bob"}}, false},
		{"two operators", Filter{"owner": map[string]any{"$eq": "alice", "$contains": "x"}}, false},
	} {
		if got := c.f.Matches(md); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := (Filter{"owner": map[string]any{"$in": []any{"a"}}}).Containment(); err == nil {
		t.Error("an unknown operator gives no error")
	}
}

func TestRulesPermissionsMostSpecific(t *testing.T) {
	r := &Rules{Permissions: map[string][]string{
		"*":              {"base"},
		"threads":        {"threads"},
		"threads:create": {"threads", "write"},
	}}
	ask := func(perms []string, resource, action string) error {
		_, err := r.Authorize(context.Background(), Request{User: &User{Identity: "u", Permissions: perms}, Resource: resource, Action: action, Value: map[string]any{}})
		return err
	}
	for _, c := range []struct {
		perms            []string
		resource, action string
		ok               bool
	}{
		{[]string{"threads"}, Threads, Read, true},
		{[]string{"threads"}, Threads, Create, false},
		{[]string{"threads", "write"}, Threads, Create, true},
		{[]string{"base"}, Threads, Read, false},
		{[]string{"base"}, Assistants, Read, true},
		{nil, Store, Put, false},
	} {
		err := ask(c.perms, c.resource, c.action)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrForbidden)) {
			t.Errorf("%v on %s:%s: %v, want allowed=%v", c.perms, c.resource, c.action, err, c.ok)
		}
	}
}

func TestRulesOwnerScoped(t *testing.T) {
	r := &Rules{OwnerScoped: true}
	alice := &User{Identity: "alice"}
	value := map[string]any{"metadata": map[string]any{"owner": "bob", "x": 1}}
	f, err := r.Authorize(context.Background(), Request{User: alice, Resource: Assistants, Action: Create, Value: value})
	if err != nil || !reflect.DeepEqual(f, Filter{"owner": "alice"}) {
		t.Fatalf("create: %v %v", f, err)
	}
	if md := value["metadata"].(map[string]any); md["owner"] != "alice" || md["x"] != 1 {
		t.Errorf("create wrote metadata %v", md)
	}
	for _, c := range []struct{ in, want []string }{
		{nil, []string{"alice"}},
		{[]string{"notes"}, []string{"alice", "notes"}},
		{[]string{"alice", "notes"}, []string{"alice", "notes"}},
		{[]string{"bob", "notes"}, []string{"alice", "bob", "notes"}},
	} {
		v := map[string]any{"namespace": toAny(c.in)}
		if f, err := r.Authorize(context.Background(), Request{User: alice, Resource: Store, Action: Search, Value: v}); err != nil || f != nil {
			t.Fatalf("store %v: %v %v", c.in, f, err)
		}
		if !reflect.DeepEqual(v["namespace"], c.want) {
			t.Errorf("namespace %v became %v, want %v", c.in, v["namespace"], c.want)
		}
	}
	if _, err := r.Authorize(context.Background(), Request{User: alice, Resource: Store, Action: Put, Value: map[string]any{"namespace": []any{1}}}); !errors.Is(err, ErrForbidden) {
		t.Errorf("a namespace label that is not a string: %v", err)
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestScopeAndRunCaller(t *testing.T) {
	ctx := context.Background()
	if f, err := Scope(ctx, Threads, Read, nil); f != nil || err != nil {
		t.Errorf("no caller: %v %v", f, err)
	}
	rules := &Rules{OwnerScoped: true}
	op := WithCaller(ctx, Caller{User: &User{Identity: "operator", Operator: true}, Authorizer: rules})
	if f, err := Scope(op, Threads, Read, nil); f != nil || err != nil {
		t.Errorf("operator: %v %v", f, err)
	}
	u := &User{Identity: "alice", Permissions: []string{"p"}, Fields: map[string]any{"team": "red"}}
	back := UserFromAuthUser(u.AuthUser())
	if back.Identity != "alice" || !reflect.DeepEqual(back.Permissions, []string{"p"}) || back.Fields["team"] != "red" || len(back.Fields) != 1 {
		t.Errorf("round trip: %+v", back)
	}
	if UserFromAuthUser(map[string]any{"permissions": []any{}}) != nil {
		t.Error("a map without identity gives a user")
	}
	run := WithRunCaller(ctx, Caller{User: u, Authorizer: rules})
	// A run caller restricts nothing by itself...
	if Restricted(run) {
		t.Error("a run caller restricts the run's own work")
	}
	// ...until the run acts as it.
	acting := ActAsRunCaller(run)
	f, err := Scope(acting, Threads, Read, nil)
	if err != nil || !reflect.DeepEqual(f, map[string]any{"owner": "alice"}) {
		t.Errorf("acting as the run caller: %v %v", f, err)
	}
	if ActAsRunCaller(ctx) != ctx {
		t.Error("ActAsRunCaller without a run caller changed ctx")
	}
}
