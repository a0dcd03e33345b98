package asynctasks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/testutil"
)

// The in-process transport acts as the user the calling run acts for: the
// tasks a user's supervisor starts are that user's, and another user's
// supervisor cannot read, wait for or cancel them.
func TestLocalActsForTheRunsUser(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	local := &asynctasks.Local{}
	local.Bind(s.Threads, s.Runs)
	rules := &authz.Rules{OwnerScoped: true}
	as := func(id string) context.Context {
		return authz.WithRunCaller(context.Background(), authz.Caller{User: &authz.User{Identity: id}, Authorizer: rules})
	}
	alice, bob := as("alice"), as("bob")
	tid, rid, err := local.Start(alice, "echo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse(tid)
	th, err := s.Threads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if th.Metadata["owner"] != "alice" {
		t.Errorf("the task's thread metadata = %v, want owner alice", th.Metadata)
	}
	run, err := s.Runs.Get(context.Background(), &id, uuid.MustParse(rid))
	if err != nil {
		t.Fatal(err)
	}
	if run.ActsFor["identity"] != "alice" {
		t.Errorf("the task's run acts for %v, want alice", run.ActsFor)
	}
	if _, err := local.Wait(alice, tid, rid); err != nil {
		t.Fatalf("alice waits for her task: %v", err)
	}
	if _, err := local.Run(bob, tid, rid); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("bob reads alice's task: %v, want not found", err)
	}
	if _, err := local.Wait(bob, tid, rid); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("bob waits for alice's task: %v, want not found", err)
	}
	if _, err := local.LastMessage(bob, tid); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("bob reads alice's task's answer: %v, want not found", err)
	}
	if err := local.Cancel(bob, tid, rid); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("bob cancels alice's task: %v, want not found", err)
	}
	if _, err := local.Update(bob, tid, "echo", "take over"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("bob updates alice's task: %v, want not found", err)
	}
	if _, err := local.LastMessage(alice, tid); err != nil {
		t.Errorf("alice reads her task's answer: %v", err)
	}
	// A run that acts for nobody (the operator's, or a server without
	// per-user auth) stays unrestricted.
	if _, err := local.Run(context.Background(), tid, rid); err != nil {
		t.Errorf("an unrestricted caller reads the task: %v", err)
	}
}

// A remote transport sends the user's credentials only when configured to.
func TestHTTPForwardsCredentialsOnlyWhenConfigured(t *testing.T) {
	got := make(chan string, 1)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Authorization"):
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"detail":"no"}`))
	}))
	t.Cleanup(remote.Close)
	ctx := authz.WithRunCaller(context.Background(), authz.Caller{
		User: &authz.User{Identity: "alice"}, Authorizer: &authz.Rules{},
		Credentials: http.Header{"Authorization": {"Bearer alices-token"}},
	})
	for _, c := range []struct {
		forward bool
		headers map[string]string
		want    string
	}{
		{false, nil, ""},
		{false, map[string]string{"Authorization": "Bearer service"}, "Bearer service"},
		{true, map[string]string{"Authorization": "Bearer service"}, "Bearer alices-token"},
	} {
		tr, err := asynctasks.NewHTTP(asynctasks.HTTPConfig{URL: remote.URL, Headers: c.headers, ForwardCredentials: c.forward, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tr.Start(ctx, "echo", "hi"); err == nil {
			t.Fatal("the remote's 404 was not an error")
		}
		if h := <-got; h != c.want {
			t.Errorf("forward=%v headers=%v: the remote got Authorization %q, want %q", c.forward, c.headers, h, c.want)
		}
	}
}
