package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"agentserver/internal/authn"
)

// Auth is the auth section of langgraph.json: LangGraph's keys (path,
// disable_studio_auth, cache, openapi) and this server's own (jwt,
// owner_scoped, owner_key, permissions).
type Auth struct {
	// Path names a JS module and its Auth export ("./auth.ts:auth") as
	// written, run by the graph workers; Module is that module resolved.
	Path   string
	Module *Module
	// DisableStudioAuth is LangGraph's switch for its Studio's requests,
	// which skip the auth module's authenticate: here the API key's (the
	// console's and the operator's) do, unless it is set.
	DisableStudioAuth bool
	// Cache is LangGraph's auth result cache (for the JS module).
	Cache *AuthCache
	// OpenAPI is LangGraph's security schemes for the API reference.
	OpenAPI map[string]any
	// JWT configures bearer tokens checked by the server (nil: none).
	JWT *authn.Config
	// OwnerScoped makes threads, assistants, crons and store namespaces
	// owned by the identity that creates them.
	OwnerScoped bool
	// OwnerKey is the metadata key of the owner ("owner").
	OwnerKey string
	// Permissions maps "resource:action", "resource" or "*" to the
	// permissions a JWT user must hold.
	Permissions map[string][]string
}

// AuthCache is LangGraph's auth.cache.
type AuthCache struct {
	CacheKeys  []string `json:"cache_keys"`
	TTLSeconds float64  `json:"ttl_seconds"`
	MaxSize    int      `json:"max_size"`
}

// Enabled reports whether the section asks for anything.
func (a Auth) Enabled() bool { return a.Path != "" || a.JWT != nil }

type authFile struct {
	Auth *struct {
		Path              string              `json:"path"`
		DisableStudioAuth bool                `json:"disable_studio_auth"`
		Cache             *AuthCache          `json:"cache"`
		OpenAPI           map[string]any      `json:"openapi"`
		OwnerScoped       bool                `json:"owner_scoped"`
		OwnerKey          string              `json:"owner_key"`
		Permissions       map[string][]string `json:"permissions"`
		JWT               *struct {
			Issuer           string          `json:"issuer"`
			JWKSURL          string          `json:"jwks_url"`
			KeyFile          string          `json:"key_file"`
			Audience         json.RawMessage `json:"audience"`
			Algorithms       []string        `json:"algorithms"`
			IdentityClaim    string          `json:"identity_claim"`
			PermissionsClaim string          `json:"permissions_claim"`
			LeewaySeconds    *float64        `json:"leeway_seconds"`
			AllowNoExpiry    bool            `json:"allow_no_expiry"`
			CacheTTLSeconds  *float64        `json:"cache_ttl_seconds"`
		} `json:"jwt"`
	} `json:"auth"`
}

// authResources are the resources permissions may name.
var authResources = map[string][]string{
	"threads":    {"create", "read", "update", "delete", "search", "create_run"},
	"assistants": {"create", "read", "update", "delete", "search"},
	"crons":      {"create", "read", "update", "delete", "search"},
	"store":      {"put", "get", "search", "delete", "list_namespaces"},
}

// LoadAuth reads and checks the auth section of the langgraph.json at
// path. Relative key files are resolved against the file's directory.
func LoadAuth(path string) (Auth, error) {
	var f authFile
	if err := readSections(path, &f, ""); err != nil {
		return Auth{}, err
	}
	if f.Auth == nil {
		return Auth{}, nil
	}
	a := f.Auth
	out := Auth{Path: a.Path, DisableStudioAuth: a.DisableStudioAuth, Cache: a.Cache, OpenAPI: a.OpenAPI,
		OwnerScoped: a.OwnerScoped, OwnerKey: a.OwnerKey, Permissions: a.Permissions}
	var errs []error
	if a.Path != "" {
		m, err := moduleOf(path, "auth.path", a.Path)
		errs = append(errs, err)
		out.Module = m
	}
	if a.JWT != nil {
		j := a.JWT
		jwt := &authn.Config{Issuer: j.Issuer, JWKSURL: j.JWKSURL, KeyFile: resolveNear(path, j.KeyFile), Algorithms: j.Algorithms,
			IdentityClaim: j.IdentityClaim, PermissionsClaim: j.PermissionsClaim, AllowNoExpiry: j.AllowNoExpiry}
		aud, err := stringOrList(j.Audience)
		errs = append(errs, err)
		jwt.Audience = aud
		jwt.Leeway, err = secondsOf("auth.jwt.leeway_seconds", j.LeewaySeconds)
		errs = append(errs, err)
		jwt.CacheTTL, err = secondsOf("auth.jwt.cache_ttl_seconds", j.CacheTTLSeconds)
		errs = append(errs, err)
		if n := countSet(j.Issuer, j.JWKSURL, j.KeyFile); n == 0 {
			errs = append(errs, errors.New("auth.jwt: set one of issuer, jwks_url or key_file"))
		} else if j.KeyFile != "" && n > 1 {
			errs = append(errs, errors.New("auth.jwt: key_file cannot be combined with issuer or jwks_url"))
		}
		out.JWT = jwt
	}
	errs = append(errs, checkPermissions(a.Permissions))
	if a.OwnerScoped && out.JWT == nil && a.Path == "" {
		errs = append(errs, errors.New("auth.owner_scoped needs auth.jwt (who owns what comes from the token)"))
	}
	if len(a.Permissions) > 0 && out.JWT == nil && a.Path == "" {
		errs = append(errs, errors.New("auth.permissions needs auth.jwt (permissions come from the token)"))
	}
	if a.Cache != nil && (a.Cache.TTLSeconds < 0 || a.Cache.MaxSize < 0) {
		errs = append(errs, errors.New("auth.cache: ttl_seconds and max_size must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return Auth{}, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// checkPermissions refuses permission entries naming an unknown resource
// or action.
func checkPermissions(p map[string][]string) error {
	var errs []error
	for k := range p {
		if k == "*" {
			continue
		}
		res, act, hasAct := strings.Cut(k, ":")
		acts, ok := authResources[res]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("auth.permissions: unknown resource %q (threads, assistants, crons, store, or *)", k))
		case hasAct && !contains(acts, act):
			errs = append(errs, fmt.Errorf("auth.permissions: unknown action %q of %s (%s)", act, res, strings.Join(acts, ", ")))
		}
	}
	return errors.Join(errs...)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func countSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

// stringOrList decodes a JSON string or list of strings.
func stringOrList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("auth.jwt.audience: want a string or a list of strings")
	}
	return many, nil
}

// secondsOf checks an optional non-negative number of seconds.
func secondsOf(name string, v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if math.IsNaN(*v) || *v < 0 || *v > 1e9 {
		return 0, fmt.Errorf("%s: want a non-negative number of seconds, got %v", name, *v)
	}
	return time.Duration(*v * float64(time.Second)), nil
}

// resolveNear resolves a relative path against the directory of the
// langgraph.json at file.
func resolveNear(file, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(file), p)
}
