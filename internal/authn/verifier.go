package authn

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrInvalidToken reports a token that is malformed, wrongly signed, or
// whose claims do not hold (the caller answers 401).
var ErrInvalidToken = errors.New("invalid token")

// ErrKeysUnavailable reports that no key could be had to check a token:
// the issuer's keys were never fetched (the caller answers 401 with a
// message saying the server cannot verify tokens now).
var ErrKeysUnavailable = errors.New("no verification keys available")

var (
	errKeyType      = fmt.Errorf("%w: the key does not fit the token's algorithm", ErrInvalidToken)
	errBadSignature = fmt.Errorf("%w: signature does not verify", ErrInvalidToken)
)

// Config says which tokens the Verifier accepts and how their claims map to
// an Identity. One of Issuer, JWKSURL or KeyFile names the keys.
type Config struct {
	// Issuer is the OIDC issuer URL: the value the iss claim must have, and
	// where the discovery document (.well-known/openid-configuration) names
	// the JWKS.
	Issuer string
	// JWKSURL is the JWK set to use instead of the discovery document's.
	JWKSURL string
	// KeyFile is a local JWK set (which may hold HS256 secrets) or PEM file.
	KeyFile string
	// Audience lists accepted aud values; empty accepts any audience.
	Audience []string
	// Algorithms lists the accepted algs (default RS256, ES256, EdDSA, and
	// HS256 when KeyFile holds a secret).
	Algorithms []string
	// IdentityClaim names the claim that becomes Identity.Identity ("sub").
	IdentityClaim string
	// PermissionsClaim names a list claim, or a space-separated string
	// claim such as "scope", that becomes Identity.Permissions
	// ("permissions", else "scope").
	PermissionsClaim string
	// Leeway tolerates clock skew on exp and nbf (default 30 s).
	Leeway time.Duration
	// AllowNoExpiry accepts tokens without exp.
	AllowNoExpiry bool
	// MaxTokenBytes bounds a token's length (default 16 KiB).
	MaxTokenBytes int
	// RefreshInterval is how often keys are fetched again, and the least
	// time between fetches caused by an unknown key id (default 10 min and
	// 30 s).
	RefreshInterval time.Duration
	// CacheTTL bounds how long a verified token is remembered (default 5
	// min); CacheSize bounds how many (default 10,000).
	CacheTTL  time.Duration
	CacheSize int
	// HTTPClient fetches discovery documents and key sets (default: a
	// client with a 10 s timeout).
	HTTPClient *http.Client
}

// Identity is who a verified token says is calling.
type Identity struct {
	Identity    string
	Permissions []string
	// Claims holds the token's other claims (not iss, sub, aud, exp, nbf,
	// iat, jti): custom fields of the user.
	Claims map[string]any
	// Expires is the token's exp (zero when it has none).
	Expires time.Time
}

// Verifier checks bearer tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	algs    []string
	jwksURL string
	now     func() time.Time

	mu          sync.RWMutex
	keys        []key
	lastFetch   time.Time
	lastAttempt time.Time

	fetching sync.Mutex // one fetch at a time

	cacheMu sync.Mutex
	cache   map[[32]byte]cachedIdentity
}

type cachedIdentity struct {
	id    Identity
	until time.Time
}

// NewVerifier loads the keys Config names. An issuer or key set that
// cannot be read at start is an error: the server should not start unable
// to verify any token.
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	cfg = withDefaults(cfg)
	v := &Verifier{cfg: cfg, now: time.Now, cache: map[[32]byte]cachedIdentity{}}
	switch {
	case cfg.KeyFile != "":
		raw, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("jwt key file: %w", err)
		}
		keys, err := parseKeyFile(raw)
		if err != nil {
			return nil, fmt.Errorf("jwt key file %s: %w", cfg.KeyFile, err)
		}
		v.keys = keys
	case cfg.JWKSURL != "" || cfg.Issuer != "":
		v.jwksURL = cfg.JWKSURL
		if v.jwksURL == "" {
			u, err := discoverJWKS(ctx, cfg.HTTPClient, cfg.Issuer)
			if err != nil {
				return nil, err
			}
			v.jwksURL = u
		}
		if err := v.refresh(ctx); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("jwt: set an issuer, a JWKS URL or a key file")
	}
	v.algs = cfg.Algorithms
	if len(v.algs) == 0 {
		v.algs = []string{RS256, ES256, EdDSA}
		if slices.ContainsFunc(v.keys, func(k key) bool { return len(k.secret) > 0 }) {
			v.algs = append(v.algs, HS256)
		}
	}
	for _, a := range v.algs {
		if !slices.Contains([]string{RS256, ES256, EdDSA, HS256}, a) {
			return nil, fmt.Errorf("jwt: algorithm %q is not supported (RS256, ES256, EdDSA, HS256)", a)
		}
	}
	return v, nil
}

func withDefaults(cfg Config) Config {
	if cfg.IdentityClaim == "" {
		cfg.IdentityClaim = "sub"
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.MaxTokenBytes == 0 {
		cfg.MaxTokenBytes = 16 << 10
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = 10 * time.Minute
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 5 * time.Minute
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = 10_000
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return cfg
}

// unknownKidRetry is the least time between fetches an unknown key id
// causes.
const unknownKidRetry = 30 * time.Second

// Verify checks token and returns the identity it carries.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	if len(token) > v.cfg.MaxTokenBytes {
		return Identity{}, fmt.Errorf("%w: token longer than %d bytes", ErrInvalidToken, v.cfg.MaxTokenBytes)
	}
	sum := sha256.Sum256([]byte(token))
	now := v.now()
	if id, ok := v.cached(sum, now); ok {
		return id, nil
	}
	t, err := parseCompact(token)
	if err != nil {
		return Identity{}, err
	}
	if !slices.Contains(v.algs, t.header.Alg) {
		return Identity{}, fmt.Errorf("%w: algorithm %q is not accepted", ErrInvalidToken, t.header.Alg)
	}
	k, err := v.keyFor(ctx, t.header)
	if err != nil {
		return Identity{}, err
	}
	if err := verifySignature(t.header.Alg, k.public, k.secret, t.signingInput, t.signature); err != nil {
		return Identity{}, err
	}
	id, err := v.identity(t.claims, now)
	if err != nil {
		return Identity{}, err
	}
	v.remember(sum, id, now)
	return id, nil
}

// keyFor finds the key of a token: by kid, else the only key fitting its
// alg. An unknown kid makes the verifier fetch the key set again (at most
// once per unknownKidRetry), as issuers rotate keys.
func (v *Verifier) keyFor(ctx context.Context, h header) (key, error) {
	if k, ok := v.findKey(h); ok {
		return k, nil
	}
	if v.jwksURL != "" && v.mayRetry() {
		if err := v.refresh(ctx); err == nil {
			if k, ok := v.findKey(h); ok {
				return k, nil
			}
		}
	}
	v.mu.RLock()
	none := len(v.keys) == 0
	v.mu.RUnlock()
	if none {
		return key{}, ErrKeysUnavailable
	}
	if h.Kid != "" {
		return key{}, fmt.Errorf("%w: key id %q is not among the issuer's keys", ErrInvalidToken, h.Kid)
	}
	return key{}, fmt.Errorf("%w: no key fits algorithm %s", ErrInvalidToken, h.Alg)
}

func (v *Verifier) findKey(h header) (key, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var found []key
	for _, k := range v.keys {
		if h.Kid != "" && k.id != h.Kid {
			continue
		}
		if k.fits(h.Alg) {
			found = append(found, k)
		}
	}
	if len(found) == 1 || (h.Kid != "" && len(found) > 0) {
		return found[0], true
	}
	return key{}, false
}

func (v *Verifier) mayRetry() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.now().Sub(v.lastAttempt) < unknownKidRetry {
		return false
	}
	v.lastAttempt = v.now()
	return true
}

// Run fetches the key set every RefreshInterval until ctx ends (nothing to
// do for a key file). A failed fetch keeps the cached keys.
func (v *Verifier) Run(ctx context.Context) {
	if v.jwksURL == "" {
		return
	}
	t := time.NewTicker(v.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = v.refresh(ctx)
		}
	}
}

// refresh fetches the key set and replaces the cached keys when it reads.
func (v *Verifier) refresh(ctx context.Context) error {
	v.fetching.Lock()
	defer v.fetching.Unlock()
	raw, err := fetch(ctx, v.cfg.HTTPClient, v.jwksURL)
	if err != nil {
		return fmt.Errorf("jwt: fetch JWKS: %w", err)
	}
	keys, err := parseJWKS(raw, false)
	if err != nil {
		return fmt.Errorf("jwt: JWKS at %s: %w", v.jwksURL, err)
	}
	v.mu.Lock()
	v.keys, v.lastFetch = keys, v.now()
	v.mu.Unlock()
	return nil
}

// maxDocumentBytes bounds a fetched discovery document or key set.
const maxDocumentBytes = 1 << 20

func fetch(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes))
}

// discoverJWKS reads the issuer's OIDC discovery document for its jwks_uri.
func discoverJWKS(ctx context.Context, c *http.Client, issuer string) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	raw, err := fetch(ctx, c, u)
	if err != nil {
		return "", fmt.Errorf("jwt: OIDC discovery: %w", err)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.JWKSURI == "" {
		return "", fmt.Errorf("jwt: OIDC discovery document at %s has no jwks_uri", u)
	}
	if strings.TrimSuffix(doc.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return "", fmt.Errorf("jwt: OIDC discovery document at %s names issuer %q, not %q", u, doc.Issuer, issuer)
	}
	return doc.JWKSURI, nil
}

// registered are the claims Identity.Claims leaves out.
var registered = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti"}

// identity checks the time, issuer and audience claims and maps the rest.
func (v *Verifier) identity(claims map[string]any, now time.Time) (Identity, error) {
	var id Identity
	exp, hasExp, err := numericDate(claims, "exp")
	if err != nil {
		return id, err
	}
	switch {
	case !hasExp && !v.cfg.AllowNoExpiry:
		return id, fmt.Errorf("%w: token has no exp", ErrInvalidToken)
	case hasExp && now.After(exp.Add(v.cfg.Leeway)):
		return id, fmt.Errorf("%w: token expired at %s", ErrInvalidToken, exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok, err := numericDate(claims, "nbf"); err != nil {
		return id, err
	} else if ok && now.Add(v.cfg.Leeway).Before(nbf) {
		return id, fmt.Errorf("%w: token not valid before %s", ErrInvalidToken, nbf.UTC().Format(time.RFC3339))
	}
	if v.cfg.Issuer != "" {
		if iss, _ := claims["iss"].(string); strings.TrimSuffix(iss, "/") != strings.TrimSuffix(v.cfg.Issuer, "/") {
			return id, fmt.Errorf("%w: wrong issuer", ErrInvalidToken)
		}
	}
	if len(v.cfg.Audience) > 0 && !audienceMatches(claims["aud"], v.cfg.Audience) {
		return id, fmt.Errorf("%w: wrong audience", ErrInvalidToken)
	}
	id.Identity, _ = claims[v.cfg.IdentityClaim].(string)
	if id.Identity == "" {
		return id, fmt.Errorf("%w: claim %q (the identity) is missing", ErrInvalidToken, v.cfg.IdentityClaim)
	}
	id.Permissions = permissions(claims, v.cfg.PermissionsClaim)
	id.Claims = map[string]any{}
	for k, val := range claims {
		if !slices.Contains(registered, k) {
			id.Claims[k] = plainNumbers(val)
		}
	}
	if hasExp {
		id.Expires = exp
	}
	return id, nil
}

func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	raw, ok := claims[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, isNum := raw.(json.Number)
	f, err := n.Float64()
	if !isNum || err != nil {
		return time.Time{}, false, fmt.Errorf("%w: %s is not a number", ErrInvalidToken, name)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true, nil
}

func audienceMatches(aud any, accepted []string) bool {
	switch a := aud.(type) {
	case string:
		return slices.Contains(accepted, a)
	case []any:
		for _, e := range a {
			if s, ok := e.(string); ok && slices.Contains(accepted, s) {
				return true
			}
		}
	}
	return false
}

func permissions(claims map[string]any, name string) []string {
	names := []string{name}
	if name == "" {
		names = []string{"permissions", "scope"}
	}
	for _, n := range names {
		switch p := claims[n].(type) {
		case []any:
			out := make([]string, 0, len(p))
			for _, e := range p {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			return out
		case string:
			return strings.Fields(p)
		}
	}
	return []string{}
}

// plainNumbers turns the json.Numbers of a claim value into float64, as
// the rest of the server reads JSON.
func plainNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		f, _ := t.Float64()
		return f
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plainNumbers(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = plainNumbers(e)
		}
		return out
	}
	return v
}

func (v *Verifier) cached(sum [32]byte, now time.Time) (Identity, bool) {
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	c, ok := v.cache[sum]
	if !ok {
		return Identity{}, false
	}
	if !now.Before(c.until) {
		delete(v.cache, sum)
		return Identity{}, false
	}
	return c.id, true
}

// remember caches a verified token until the earlier of its expiry and
// CacheTTL. A full cache drops entries that lapsed, then arbitrary ones.
func (v *Verifier) remember(sum [32]byte, id Identity, now time.Time) {
	until := now.Add(v.cfg.CacheTTL)
	if !id.Expires.IsZero() && id.Expires.Before(until) {
		until = id.Expires
	}
	v.cacheMu.Lock()
	defer v.cacheMu.Unlock()
	if len(v.cache) >= v.cfg.CacheSize {
		for k, c := range v.cache {
			if !now.Before(c.until) || len(v.cache) >= v.cfg.CacheSize {
				delete(v.cache, k)
			}
		}
	}
	v.cache[sum] = cachedIdentity{id: id, until: until}
}
