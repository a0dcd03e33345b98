package authz

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"agentserver/internal/authn"
	"agentserver/internal/errdefs"
)

// JWT authenticates bearer tokens with an authn.Verifier.
type JWT struct {
	Verifier *authn.Verifier
}

// Authenticate implements Authenticator: a request without an
// "Authorization: Bearer" header has no credentials for it.
func (j JWT) Authenticate(r *http.Request) (*User, error) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, nil
	}
	id, err := j.Verifier.Verify(r.Context(), strings.TrimSpace(token))
	if errors.Is(err, authn.ErrKeysUnavailable) {
		return nil, fmt.Errorf("the server cannot verify tokens now: %w", errdefs.ErrUnauthorized)
	}
	if err != nil {
		// authn's errors say what is wrong, never the token or the keys.
		return nil, fmt.Errorf("bearer token: %s: %w", err.Error(), errdefs.ErrUnauthorized)
	}
	if id.Identity == "" {
		return nil, fmt.Errorf("bearer token: no identity claim: %w", errdefs.ErrUnauthorized)
	}
	return &User{Identity: id.Identity, Permissions: id.Permissions, Fields: id.Claims}, nil
}
