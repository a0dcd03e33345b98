// Package authn establishes who is calling: it verifies JWT bearer tokens
// (JWS compact form) against keys from an OIDC issuer's JWKS, a JWKS URL or
// a local key file, and maps their claims to an Identity.
//
// # Invariants
//
//   - A token is accepted only when its alg is one the configuration
//     allows, its key (by kid, else the only key that fits) has the type
//     that alg needs, and the signature verifies; "none" and an HMAC alg
//     over a public key are never accepted (no algorithm confusion).
//   - exp, nbf, iss and aud are checked on every token; a token without exp
//     is refused unless the configuration allows it.
//   - Keys are fetched over HTTP only at start and when a token names a key
//     id the cache lacks (at most once per RefreshInterval), and on a timer;
//     a failed fetch keeps the keys already cached, so an unreachable issuer
//     does not lock out tokens signed with known keys.
//   - Verified tokens are cached by their SHA-256 until the earlier of their
//     expiry and CacheTTL, so a repeated token costs a hash and a map read.
//   - Errors say what is wrong with the token (expired, wrong audience, …)
//     but never echo the token or the keys.
package authn
