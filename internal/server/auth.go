package server

import (
	"context"
	"fmt"
	"time"

	"agentserver/internal/authn"
	"agentserver/internal/authz"
	"agentserver/internal/config"
	"agentserver/internal/httpapi"
	"agentserver/internal/runs"
)

// buildAuth reads the auth section of langgraph.json and returns the HTTP
// layer's Auth and the token verifier to keep refreshed (nil: none).
func buildAuth(cfg config.Config) (httpapi.Auth, *authn.Verifier, error) {
	out := httpapi.Auth{APIKey: cfg.APIKey}
	ac, err := config.LoadAuth(cfg.GraphsFile)
	if err != nil {
		return out, nil, err
	}
	if ac.Path != "" {
		return out, nil, fmt.Errorf("auth.path %q: JS Auth modules are not run by this server yet; use auth.jwt with owner_scoped and permissions (docs/auth.md), or remove auth.path", ac.Path)
	}
	if ac.JWT == nil {
		return out, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := authn.NewVerifier(ctx, *ac.JWT)
	if err != nil {
		return out, nil, fmt.Errorf("auth.jwt: %w", err)
	}
	out.Authenticators = []authz.Authenticator{authz.JWT{Verifier: v}}
	out.Authorizer = &authz.Rules{OwnerScoped: ac.OwnerScoped, OwnerKey: ac.OwnerKey, Permissions: ac.Permissions}
	return out, v, nil
}

// webhookPolicy reads the webhooks section of langgraph.json. Webhooks to
// loopback and private addresses are refused by default when per-user
// credentials are accepted (a user must not make the server call its own
// network), and allowed otherwise (the operator's server, whose tests
// and tools post to 127.0.0.1); webhooks.url.allow_private decides either
// way.
func webhookPolicy(cfg config.Config, auth httpapi.Auth) (runs.WebhookPolicy, error) {
	w, err := config.LoadWebhooks(cfg.GraphsFile)
	if err != nil {
		return runs.WebhookPolicy{}, err
	}
	allow := len(auth.Authenticators) == 0
	if w.AllowPrivate != nil {
		allow = *w.AllowPrivate
	}
	return runs.WebhookPolicy{AllowPrivate: allow, RequireHTTPS: w.RequireHTTPS}, nil
}
