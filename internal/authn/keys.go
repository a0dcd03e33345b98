package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
)

// key is one verification key: a public key, or an HMAC secret (only from a
// local key file).
type key struct {
	id     string
	alg    string // the JWK's alg when it names one
	public crypto.PublicKey
	secret []byte
}

// fits reports whether k can verify tokens of alg.
func (k key) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch alg {
	case RS256:
		_, ok := k.public.(*rsa.PublicKey)
		return ok
	case ES256:
		_, ok := k.public.(*ecdsa.PublicKey)
		return ok
	case EdDSA:
		_, ok := k.public.(ed25519.PublicKey)
		return ok
	case HS256:
		return len(k.secret) > 0
	}
	return false
}

// jwk is the subset of RFC 7517 members the verifier reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	K   string `json:"k"`
}

// parseJWKS reads a JWK Set. Keys for other uses than signatures, and of
// types the verifier does not know, are skipped; symmetric keys are taken
// only when allowSecrets is set (a local file, never a fetched set).
func parseJWKS(raw []byte, allowSecrets bool) ([]key, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("not a JWK set: %w", err)
	}
	var out []key
	for _, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		k, err := j.key(allowSecrets)
		if errors.Is(err, errUnknownKeyType) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", j.Kid, err)
		}
		out = append(out, k)
	}
	return out, nil
}

var errUnknownKeyType = errors.New("unknown key type")

func (j jwk) key(allowSecrets bool) (key, error) {
	k := key{id: j.Kid, alg: j.Alg}
	switch j.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(j.N)
		e, err2 := b64.DecodeString(j.E)
		if err1 != nil || err2 != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
			return k, errors.New("RSA key needs n of 2048 bits or more and a small e")
		}
		k.public = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	case "EC":
		if j.Crv != "P-256" {
			return k, errUnknownKeyType
		}
		x, err1 := b64.DecodeString(j.X)
		y, err2 := b64.DecodeString(j.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return k, errors.New("P-256 key needs 32-byte x and y")
		}
		raw := append([]byte{4}, append(x, y...)...)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
		if err != nil {
			return k, errors.New("P-256 point is not on the curve")
		}
		k.public = pub
	case "OKP":
		if j.Crv != "Ed25519" {
			return k, errUnknownKeyType
		}
		x, err := b64.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return k, errors.New("Ed25519 key needs a 32-byte x")
		}
		k.public = ed25519.PublicKey(x)
	case "oct":
		if !allowSecrets {
			return k, errUnknownKeyType
		}
		s, err := b64.DecodeString(j.K)
		if err != nil || len(s) < 32 {
			return k, errors.New("HMAC secret must be at least 32 bytes")
		}
		k.secret = s
	default:
		return k, errUnknownKeyType
	}
	return k, nil
}

// parseKeyFile reads a local key file: a JWK set (JSON), or PEM blocks of
// public keys and certificates.
func parseKeyFile(raw []byte) ([]key, error) {
	if json.Valid(raw) {
		return parseJWKS(raw, true)
	}
	var out []key
	for rest := raw; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		var pub any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				pub = cert.PublicKey
			}
		default:
			return nil, fmt.Errorf("PEM block %q is not a public key or certificate", block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %q: %w", block.Type, err)
		}
		out = append(out, key{public: pub})
	}
	if len(out) == 0 {
		return nil, errors.New("no JWK set and no PEM public key in the file")
	}
	return out, nil
}
