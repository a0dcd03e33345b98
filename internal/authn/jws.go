package authn

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// Supported algorithms (RFC 7518 names; EdDSA is RFC 8037's Ed25519).
const (
	RS256 = "RS256"
	ES256 = "ES256"
	EdDSA = "EdDSA"
	HS256 = "HS256"
)

// header is the JOSE header of a token.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
	// Crit lists extensions the verifier must understand; none are.
	Crit []string `json:"crit"`
}

// compactToken is a parsed, not yet verified, JWS compact token.
type compactToken struct {
	header       header
	claims       map[string]any
	signingInput []byte
	signature    []byte
}

var b64 = base64.RawURLEncoding

// parseCompact splits and decodes a token without verifying it.
func parseCompact(token string) (compactToken, error) {
	var t compactToken
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return t, fmt.Errorf("%w: not a JWS compact token (want three dot-separated parts)", ErrInvalidToken)
	}
	rawHeader, err := b64.DecodeString(parts[0])
	if err != nil {
		return t, fmt.Errorf("%w: header is not base64url", ErrInvalidToken)
	}
	if err := json.Unmarshal(rawHeader, &t.header); err != nil {
		return t, fmt.Errorf("%w: header is not a JSON object", ErrInvalidToken)
	}
	if len(t.header.Crit) > 0 {
		return t, fmt.Errorf("%w: critical header extensions are not supported", ErrInvalidToken)
	}
	rawClaims, err := b64.DecodeString(parts[1])
	if err != nil {
		return t, fmt.Errorf("%w: payload is not base64url", ErrInvalidToken)
	}
	dec := json.NewDecoder(bytes.NewReader(rawClaims))
	dec.UseNumber()
	if err := dec.Decode(&t.claims); err != nil || t.claims == nil {
		return t, fmt.Errorf("%w: payload is not a JSON object", ErrInvalidToken)
	}
	if t.signature, err = b64.DecodeString(parts[2]); err != nil {
		return t, fmt.Errorf("%w: signature is not base64url", ErrInvalidToken)
	}
	t.signingInput = []byte(token[:len(parts[0])+1+len(parts[1])])
	return t, nil
}

// verifySignature checks sig over input with key for alg. The key's type
// must be the one alg needs.
func verifySignature(alg string, key crypto.PublicKey, secret []byte, input, sig []byte) error {
	switch alg {
	case RS256:
		pub, ok := key.(*rsa.PublicKey)
		if !ok {
			return errKeyType
		}
		sum := sha256.Sum256(input)
		if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
			return errBadSignature
		}
	case ES256:
		pub, ok := key.(*ecdsa.PublicKey)
		if !ok || pub.Curve.Params().Name != "P-256" {
			return errKeyType
		}
		if len(sig) != 64 {
			return errBadSignature
		}
		sum := sha256.Sum256(input)
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(pub, sum[:], r, s) {
			return errBadSignature
		}
	case EdDSA:
		pub, ok := key.(ed25519.PublicKey)
		if !ok {
			return errKeyType
		}
		if !ed25519.Verify(pub, input, sig) {
			return errBadSignature
		}
	case HS256:
		if len(secret) == 0 {
			return errKeyType
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(input)
		if !hmac.Equal(mac.Sum(nil), sig) {
			return errBadSignature
		}
	default:
		return fmt.Errorf("%w: algorithm %q is not supported", ErrInvalidToken, alg)
	}
	return nil
}
