package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentserver/internal/authn"
	"agentserver/internal/authz"
	"agentserver/internal/config"
	"agentserver/internal/httpapi"
	"agentserver/internal/jsworker"
	"agentserver/internal/runs"
)

// buildAuth turns the auth section of langgraph.json (ac) into the HTTP
// layer's Auth and the token verifier to keep refreshed (nil: none). pool
// runs the JS Auth module of auth.path, when there is one.
func buildAuth(cfg config.Config, ac config.Auth, pool *jsworker.Pool) (httpapi.Auth, *authn.Verifier, error) {
	out := httpapi.Auth{APIKey: cfg.APIKey}
	var verifier *authn.Verifier
	rules := &authz.Rules{OwnerScoped: ac.OwnerScoped, OwnerKey: ac.OwnerKey, Permissions: ac.Permissions}
	if ac.JWT != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		v, err := authn.NewVerifier(ctx, *ac.JWT)
		if err != nil {
			return out, nil, fmt.Errorf("auth.jwt: %w", err)
		}
		verifier = v
		out.Authenticators = []authz.Authenticator{authz.JWT{Verifier: v}}
		out.Authorizer = rules
	}
	if ac.Module == nil {
		return out, verifier, nil
	}
	js := pool.Auth(cacheOf(ac.Cache))
	if js == nil {
		return out, nil, errors.New("auth.path: the graph workers did not load the auth module")
	}
	// Bearer tokens go to auth.jwt first when both are set; the module's
	// authenticate sees every other request.
	out.Authenticators = append(out.Authenticators, js)
	switch {
	case js.HasHandlers() && (ac.OwnerScoped || len(ac.Permissions) > 0):
		return out, nil, fmt.Errorf("auth.path %q has on(...) handlers: they decide who sees what, so auth.owner_scoped and auth.permissions cannot be set beside them", ac.Path)
	case js.HasHandlers() || ac.JWT == nil && !ac.OwnerScoped && len(ac.Permissions) == 0:
		out.Authorizer = js
	default:
		out.Authorizer = rules
	}
	if ac.DisableStudioAuth {
		// LangGraph's Studio skips the module's authenticate unless
		// disable_studio_auth is set; here the API key does: with it
		// set, the key is one more header the module judges.
		out.APIKey = ""
	}
	return out, verifier, nil
}

// cacheOf is LangGraph's auth.cache for the JS module (nil: no cache).
func cacheOf(c *config.AuthCache) *jsworker.AuthCache {
	if c == nil {
		return nil
	}
	return &jsworker.AuthCache{Keys: c.CacheKeys, TTL: time.Duration(c.TTLSeconds * float64(time.Second)), MaxSize: c.MaxSize}
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
