# Run `make help` for the list of targets.
GO ?= go

.PHONY: help run build generate check-generated vet test test-go test-go-postgres test-sdk bench fuzz

help:
	@echo "run              serve ./langgraph.json on 127.0.0.1:2024 (data in ./data)"
	@echo "test             everything CI runs: generated code, vet, Go tests (-race) on bbolt and on PostgreSQL, SDK suite"
	@echo "test-go-postgres the Go tests on a throwaway PostgreSQL cluster (scripts/pg-test-cluster.sh)"
	@echo "generate         regenerate api/*.gen.go from api/openapi.yaml"
	@echo "bench            storage and HTTP benchmarks (see docs/benchmarks.md)"

run:
	$(GO) run ./cmd/server

# The commit --version and /info report (the go command's VCS stamp is the
# fallback when this is empty).
VERSION_LDFLAGS = -X agentserver/internal/version.Commit=$(shell git rev-parse HEAD 2>/dev/null)

build:
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/server ./cmd/server
	$(GO) build -o bin/loadgen ./cmd/loadgen

generate:
	$(GO) generate ./api/...

check-generated:
	./scripts/check-generated.sh

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

test-go:
	$(GO) test -race -count=1 ./...

# The same tests with every database in PostgreSQL: the script starts a
# throwaway cluster (installing the postgresql package when missing) and
# removes it afterwards.
test-go-postgres:
	./scripts/pg-test-cluster.sh $(GO) test -race -count=1 ./...

test-sdk:
	bash tests/sdk/run.sh

test: check-generated vet test-go test-go-postgres test-sdk

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/storage/ ./internal/httpapi/
	$(GO) run ./cmd/loadgen -scenario all

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRequestDecoding -fuzztime 60s ./internal/httpapi/
