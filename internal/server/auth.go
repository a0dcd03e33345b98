package server

import (
	"context"
	"fmt"
	"time"

	"agentserver/internal/authn"
	"agentserver/internal/authz"
	"agentserver/internal/config"
	"agentserver/internal/httpapi"
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
