package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// issuer is a local OIDC issuer: a discovery document and a JWKS served
// over real HTTP on 127.0.0.1, with keys the test can rotate.
type issuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	jwks    []map[string]any
	fetches atomic.Int32
	down    atomic.Bool
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		if is.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"keys": is.jwks})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) publish(keys ...map[string]any) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.jwks = keys
}

func enc(b []byte) string { return b64.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PrivateKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
}

func ecJWK(kid string, k *ecdsa.PrivateKey) map[string]any {
	raw, _ := k.PublicKey.Bytes() // 0x04 || x || y
	return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": enc(raw[1:33]), "y": enc(raw[33:])}
}

func edJWK(kid string, pub ed25519.PublicKey) map[string]any {
	return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": enc(pub)}
}

// sign builds a compact token of claims signed with key for alg.
func sign(t testing.TB, alg, kid string, key any, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	input := enc(hb) + "." + enc(cb)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch k := key.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k, sum[:])
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(input))
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case nil:
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

type keys struct {
	rsa  *rsa.PrivateKey
	rsa2 *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	ed   ed25519.PrivateKey
	edPu ed25519.PublicKey
}

var testKeys = sync.OnceValue(func() keys {
	var k keys
	k.rsa, _ = rsa.GenerateKey(rand.Reader, 2048)
	k.rsa2, _ = rsa.GenerateKey(rand.Reader, 2048)
	k.ec, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k.edPu, k.ed, _ = ed25519.GenerateKey(rand.Reader)
	return k
})

func claimsFor(is string, mods map[string]any) map[string]any {
	c := map[string]any{"iss": is, "sub": "user-1", "aud": "agentserver", "exp": time.Now().Add(time.Hour).Unix(),
		"nbf": time.Now().Add(-time.Minute).Unix(), "iat": time.Now().Unix(), "permissions": []string{"threads:write"}, "org": "acme"}
	for k, v := range mods {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// rsaIssuer starts an issuer publishing one RSA key ("r1") and a verifier
// that trusts it.
func rsaIssuer(t *testing.T) (keys, *issuer, *Verifier) {
	k := testKeys()
	is := newIssuer(t)
	is.publish(rsaJWK("r1", k.rsa))
	return k, is, oidcVerifier(t, is)
}

func oidcVerifier(t *testing.T, is *issuer) *Verifier {
	t.Helper()
	v, err := NewVerifier(context.Background(), Config{Issuer: is.srv.URL, Audience: []string{"agentserver"}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Tokens signed with each supported algorithm by the issuer's published
// keys are accepted and mapped to an identity.
func TestVerifyAcceptsEachAlgorithmFromTheIssuersJWKS(t *testing.T) {
	k := testKeys()
	is := newIssuer(t)
	is.publish(rsaJWK("r1", k.rsa), ecJWK("e1", k.ec), edJWK("d1", k.edPu))
	v := oidcVerifier(t, is)
	for _, c := range []struct {
		alg, kid string
		key      any
	}{{RS256, "r1", k.rsa}, {ES256, "e1", k.ec}, {EdDSA, "d1", k.ed}} {
		id, err := v.Verify(context.Background(), sign(t, c.alg, c.kid, c.key, claimsFor(is.srv.URL, nil)))
		if err != nil {
			t.Fatalf("%s: %v", c.alg, err)
		}
		if id.Identity != "user-1" || len(id.Permissions) != 1 || id.Permissions[0] != "threads:write" || id.Claims["org"] != "acme" {
			t.Fatalf("%s: identity %+v", c.alg, id)
		}
		if _, leaked := id.Claims["exp"]; leaked {
			t.Fatalf("%s: registered claims among the custom fields: %v", c.alg, id.Claims)
		}
	}
}

// Each kind of bad token is refused with an ErrInvalidToken that says why.
func TestVerifyRefusesBadTokens(t *testing.T) {
	k, is, v := rsaIssuer(t)
	good := claimsFor(is.srv.URL, nil)
	forged := sign(t, RS256, "r1", k.rsa2, good)
	cases := map[string]struct {
		token string
		want  string
	}{
		"expired":                   {sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})), "expired"},
		"not yet valid":             {sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "not valid before"},
		"wrong issuer":              {sign(t, RS256, "r1", k.rsa, claimsFor("https://elsewhere.example", nil)), "wrong issuer"},
		"wrong audience":            {sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"aud": []string{"other"}})), "wrong audience"},
		"no expiry":                 {sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"exp": nil})), "no exp"},
		"no subject":                {sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"sub": nil})), "identity"},
		"alg none":                  {sign(t, "none", "r1", nil, good), "not accepted"},
		"forged":                    {forged, "signature"},
		"tampered":                  {tamper(sign(t, RS256, "r1", k.rsa, good)), "signature"},
		"unknown kid":               {sign(t, RS256, "r9", k.rsa, good), "key id"},
		"HS256 over the public key": {sign(t, HS256, "r1", k.rsa.PublicKey.N.Bytes(), good), "not accepted"},
		"oversized":                 {sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"pad": strings.Repeat("x", 20<<10)})), "longer than"},
		"garbage":                   {"abc.def", "three"},
		"crit header":               {critToken(t, k.rsa, good), "critical"},
	}
	for name, c := range cases {
		_, err := v.Verify(context.Background(), c.token)
		if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrInvalidToken mentioning %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: the error echoes the token", name)
		}
	}
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	var c map[string]any
	raw, _ := b64.DecodeString(parts[1])
	json.Unmarshal(raw, &c)
	c["sub"] = "admin"
	nb, _ := json.Marshal(c)
	return parts[0] + "." + enc(nb) + "." + parts[2]
}

func critToken(t *testing.T, k *rsa.PrivateKey, claims map[string]any) string {
	hb, _ := json.Marshal(map[string]any{"alg": RS256, "kid": "r1", "crit": []string{"exp"}})
	cb, _ := json.Marshal(claims)
	input := enc(hb) + "." + enc(cb)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

// A token signed with a key the issuer published after the verifier
// started is accepted after one fetch of the key set (rotation); a second
// unknown key id right after does not fetch again.
func TestVerifyFollowsKeyRotation(t *testing.T) {
	k, is, v := rsaIssuer(t)
	start := is.fetches.Load()
	is.publish(rsaJWK("r1", k.rsa), rsaJWK("r2", k.rsa2))
	if _, err := v.Verify(context.Background(), sign(t, RS256, "r2", k.rsa2, claimsFor(is.srv.URL, nil))); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if got := is.fetches.Load() - start; got != 1 {
		t.Fatalf("fetches for a rotated key = %d, want 1", got)
	}
	if _, err := v.Verify(context.Background(), sign(t, RS256, "r3", k.rsa2, claimsFor(is.srv.URL, nil))); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("unknown kid: %v", err)
	}
	if got := is.fetches.Load() - start; got != 1 {
		t.Fatalf("an unknown kid right after a fetch fetched again (%d fetches)", got)
	}
}

// With the issuer unreachable, tokens of cached keys keep working and a
// new key id is refused with a clear error.
func TestVerifyKeepsCachedKeysWhenTheIssuerIsDown(t *testing.T) {
	k, is, v := rsaIssuer(t)
	is.down.Store(true)
	v.lastAttempt = time.Time{}
	if err := v.refresh(context.Background()); err == nil {
		t.Fatal("refresh against a down issuer succeeded")
	}
	if _, err := v.Verify(context.Background(), sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"jti": "fresh"}))); err != nil {
		t.Fatalf("cached key with the issuer down: %v", err)
	}
	_, err := v.Verify(context.Background(), sign(t, RS256, "r2", k.rsa2, claimsFor(is.srv.URL, nil)))
	if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "r2") {
		t.Fatalf("new key id with the issuer down: %v", err)
	}
}

// A verifier whose key set has no keys answers ErrKeysUnavailable, and one
// whose issuer cannot be reached at start does not start.
func TestVerifierWithoutKeys(t *testing.T) {
	k := testKeys()
	is := newIssuer(t)
	v := oidcVerifier(t, is) // the issuer publishes no keys
	if _, err := v.Verify(context.Background(), sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, nil))); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("err = %v, want ErrKeysUnavailable", err)
	}
	is.srv.Close()
	if _, err := NewVerifier(context.Background(), Config{Issuer: is.srv.URL}); err == nil {
		t.Fatal("a verifier started with its issuer unreachable")
	}
}

// A local key file: a JWK set with an HS256 secret, and PEM public keys.
func TestVerifyWithLocalKeyFiles(t *testing.T) {
	k := testKeys()
	dir := t.TempDir()
	secret := []byte(strings.Repeat("s", 32))
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "oct", "kid": "h1", "k": enc(secret)}}})
	jwksFile := filepath.Join(dir, "keys.json")
	os.WriteFile(jwksFile, jwks, 0o600)
	v, err := NewVerifier(context.Background(), Config{KeyFile: jwksFile, Issuer: "https://id.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), sign(t, HS256, "h1", secret, claimsFor("https://id.example", nil))); err != nil {
		t.Fatalf("HS256: %v", err)
	}
	if _, err := v.Verify(context.Background(), sign(t, HS256, "h1", []byte(strings.Repeat("t", 32)), claimsFor("https://id.example", nil))); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("HS256 with the wrong secret: %v", err)
	}

	pemFile := filepath.Join(dir, "key.pem")
	os.WriteFile(pemFile, pemOf(t, &k.ec.PublicKey), 0o600)
	v, err = NewVerifier(context.Background(), Config{KeyFile: pemFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), sign(t, ES256, "", k.ec, claimsFor("any", nil))); err != nil {
		t.Fatalf("ES256 from PEM: %v", err)
	}
	if _, err := v.Verify(context.Background(), sign(t, HS256, "", secret, claimsFor("any", nil))); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("HS256 against a PEM public key: %v", err)
	}
}

// A verified token is served from the cache, but not past its expiry.
func TestVerifyCachesUntilExpiry(t *testing.T) {
	k, is, v := rsaIssuer(t)
	now := time.Now()
	v.now = func() time.Time { return now }
	tok := sign(t, RS256, "r1", k.rsa, claimsFor(is.srv.URL, map[string]any{"exp": now.Add(time.Minute).Unix()}))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.cached(sha256.Sum256([]byte(tok)), now); !ok {
		t.Fatal("a verified token is not cached")
	}
	now = now.Add(2 * time.Minute)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("expired cached token: %v", err)
	}
}

// BenchmarkVerify measures a request's authentication cost: a token seen
// before (cached) and a fresh one (signature checked).
func BenchmarkVerify(b *testing.B) {
	k := testKeys()
	mux := http.NewServeMux()
	var url string
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{rsaJWK("r1", k.rsa), ecJWK("e1", k.ec), edJWK("d1", k.edPu)}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	url = srv.URL
	v, err := NewVerifier(context.Background(), Config{JWKSURL: url + "/jwks", Issuer: url})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		alg, kid string
		key      any
	}{{RS256, "r1", k.rsa}, {ES256, "e1", k.ec}, {EdDSA, "d1", k.ed}} {
		tok := sign(b, c.alg, c.kid, c.key, claimsFor(url, nil))
		b.Run(c.alg+"/cached", func(b *testing.B) {
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.alg+"/uncached", func(b *testing.B) {
			for b.Loop() {
				v.cacheMu.Lock()
				clear(v.cache)
				v.cacheMu.Unlock()
				if _, err := v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func pemOf(t *testing.T, pub any) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
