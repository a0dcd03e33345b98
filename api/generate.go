// Package api holds the HTTP contract of agentserver: the hand-written
// OpenAPI 3.0.3 document (openapi.yaml) and the Go code generated from it.
//
// server.gen.go carries the models, the Echo ServerInterface, the strict
// server (StrictServerInterface, request/response objects) and the embedded
// spec (GetSwagger). client.gen.go carries a typed HTTP client that reuses
// those models. Both files are produced by `go generate ./api/...`; never edit
// them by hand.
package api

//go:generate go tool oapi-codegen -config oapi-codegen-server.yaml openapi.yaml
//go:generate go tool oapi-codegen -config oapi-codegen-client.yaml openapi.yaml
