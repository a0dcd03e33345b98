package testutil

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// JWKS is an RSA key whose public half is served as a JWK set on
// 127.0.0.1, and which signs RS256 tokens: the issuer of the auth tests.
type JWKS struct {
	// URL is the JWK set's address.
	URL string
	// Issuer and Audience are the iss and aud of the tokens Token signs.
	Issuer, Audience string
	key              *rsa.PrivateKey
	kid              string
}

// NewJWKS makes a key and serves its JWK set until the test ends.
func NewJWKS(t testing.TB) *JWKS {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j := &JWKS{Issuer: "https://issuer.test", Audience: "agentserver", key: key, kid: "test-key-1"}
	set := map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "kid": j.kid, "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}}
	body, _ := json.Marshal(set)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	j.URL = srv.URL
	return j
}

// AuthSection is the auth section of a langgraph.json that trusts j,
// with extra keys (owner_scoped, permissions, …) added.
func (j *JWKS) AuthSection(extra map[string]any) map[string]any {
	out := map[string]any{"jwt": map[string]any{"jwks_url": j.URL, "issuer": j.Issuer, "audience": j.Audience}}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// Token signs a token for sub valid for an hour, with the given
// permissions and extra claims.
func (j *JWKS) Token(t testing.TB, sub string, permissions []string, extra map[string]any) string {
	t.Helper()
	now := time.Now()
	claims := map[string]any{"iss": j.Issuer, "aud": j.Audience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if permissions != nil {
		claims["permissions"] = permissions
	}
	for k, v := range extra {
		claims[k] = v
	}
	return j.Sign(t, map[string]any{"alg": "RS256", "typ": "JWT", "kid": j.kid}, claims)
}

// Sign signs claims under header with j's key (RS256), whatever header
// says: tests forge tokens with it.
func (j *JWKS) Sign(t testing.TB, header, claims map[string]any) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, j.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

// Bearer is the Authorization header of token.
func Bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// WithSection returns the langgraph.json graphs with section name set to v.
func WithSection(t testing.TB, graphs, name string, v any) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(graphs), &doc); err != nil {
		t.Fatal(err)
	}
	doc[name] = v
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// As returns a client of the same server that sends header instead of
// s.Header (another user's credentials).
func (s *Server) As(header http.Header) *Server {
	c := *s
	c.Header = header
	return &c
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// StartAuth serves TestGraphs with JWTs from a new local JWKS (returned)
// and the API key "opkey"; extra are more keys of the auth section.
func StartAuth(t testing.TB, extra map[string]any) (*Server, *JWKS) {
	t.Helper()
	j := NewJWKS(t)
	graphs := WithSection(t, TestGraphs, "auth", j.AuthSection(extra))
	return StartServer(t, Options{Graphs: graphs, APIKey: "opkey"}), j
}
