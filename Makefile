# Run `make help` for the list of targets.
GO ?= go

.PHONY: help run build dist generate check-generated vet test test-go test-sdk test-sdk-postgres test-go-postgres test-ui sdk-deps bench fuzz

help:
	@echo "run              build and serve ./langgraph.json on 127.0.0.1:2024 (data in ./data)"
	@echo "build            build bin/server and bin/loadgen (version and commit stamped in)"
	@echo "dist             static release binaries for linux and darwin (amd64, arm64) in dist/, with SHA256SUMS"
	@echo "test             everything CI runs: generated code, vet, Go tests (-race) on bbolt and on PostgreSQL, SDK suite, console"
	@echo "test-go          the Go tests alone, with -race"
	@echo "test-go-postgres the Go tests on a throwaway PostgreSQL cluster (scripts/pg-test-cluster.sh)"
	@echo "test-sdk         the Node suite alone (real @langchain/langgraph-sdk against the server)"
	@echo "test-sdk-postgres the Node suite on a throwaway PostgreSQL cluster: one server, then two replicas round-robin"
	@echo "test-ui          the web console in Chromium (playwright-core; needs /usr/bin/chromium)"
	@echo "sdk-deps         install tests/sdk's npm packages (the SDKs, deepagents, MCP servers) if missing"
	@echo "vet              go vet and gofmt"
	@echo "generate         regenerate api/*.gen.go from api/openapi.yaml"
	@echo "check-generated  fail when api/*.gen.go does not match api/openapi.yaml"
	@echo "bench            storage and HTTP benchmarks, then the load generator (see docs/benchmarks.md)"
	@echo "fuzz             fuzz request decoding for 60 s"

# The commit --version and /info report (the go command's VCS stamp is the
# fallback when this is empty).
VERSION_LDFLAGS = -X agentserver/internal/version.Commit=$(shell git rev-parse HEAD 2>/dev/null)

# The first build compiles every dependency (minutes on a small machine);
# the targets say so before they start, rather than sit silent.
BUILD_NOTE = (the first build compiles every dependency and takes a few minutes; later ones take seconds)

# run builds first and then starts the binary itself, so that Ctrl-C reaches
# the server alone and a clean stop ends make without an error line.
run:
	@echo "make run: building bin/server $(BUILD_NOTE)"
	@$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/server ./cmd/server
	@echo "make run: starting bin/server: ./langgraph.json on 127.0.0.1:2024, data in ./data; Ctrl-C stops it"
	@./bin/server

build:
	@echo "make build: building bin/server and bin/loadgen $(BUILD_NOTE)"
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/server ./cmd/server
	$(GO) build -o bin/loadgen ./cmd/loadgen
	@echo "make build: done; start the server with ./bin/server (--help lists the flags)"

# dist builds the release archives: for each platform a static binary
# (CGO_ENABLED=0) with the version and commit stamped in, packed with the
# shipped langgraph.json, agent specs, README and docs, and SHA256SUMS over
# them.
# VERSION is the tag at HEAD, else v<base>-dev; set it to override.
VERSION ?= $(or $(shell git describe --tags --exact-match --match 'v*' 2>/dev/null),v$(shell sed -n 's/^const Base = "\(.*\)"/\1/p' internal/version/version.go)-dev)
DIST_PLATFORMS = linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SHA256 = $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo shasum -a 256)

dist:
	@echo "make dist: building agentserver $(VERSION) for $(DIST_PLATFORMS) into dist/ (each platform compiles every dependency: several minutes)"
	@rm -rf dist && mkdir -p dist
	@set -e; for p in $(DIST_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=agentserver-$(VERSION)-$$os-$$arch; \
	  echo "make dist: $$name"; \
	  mkdir -p dist/$$name; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "-s -w $(VERSION_LDFLAGS) -X agentserver/internal/version.Version=$(VERSION)" \
	    -o dist/$$name/agentserver ./cmd/server; \
	  cp -R langgraph.json agents README.md docs dist/$$name/; \
	  tar -C dist -czf dist/$$name.tar.gz $$name; \
	  rm -rf dist/$$name; \
	done
	@cd dist && $(SHA256) *.tar.gz > SHA256SUMS
	@echo "make dist: done:"; ls -1 dist

generate:
	$(GO) generate ./api/...

check-generated:
	./scripts/check-generated.sh

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

# The Go tests drive real MCP servers from tests/sdk's npm packages.
sdk-deps:
	@[ -d tests/sdk/node_modules/@modelcontextprotocol ] || (cd tests/sdk && npm ci --no-audit --no-fund)

test-go: sdk-deps
	$(GO) test -race -count=1 -timeout 20m ./...

# The same tests with every database in PostgreSQL: the script starts a
# throwaway cluster (installing the postgresql package when missing) and
# removes it afterwards.
test-go-postgres:
	./scripts/pg-test-cluster.sh $(GO) test -race -count=1 -timeout 20m ./...

test-sdk:
	bash tests/sdk/run.sh

# The Node suite against a server on a throwaway PostgreSQL cluster, then
# against two replicas of it behind a round-robin proxy.
test-sdk-postgres:
	./scripts/pg-test-cluster.sh bash tests/sdk/run.sh
	SDK_REPLICAS=2 ./scripts/pg-test-cluster.sh bash tests/sdk/run.sh

test-ui:
	bash tests/ui/run.sh

test: check-generated vet test-go test-go-postgres test-sdk test-sdk-postgres test-ui

# The whole-server benchmarks live beside their subjects, among benchmarks
# of those packages that bench does not run.
SERVER_BENCH = AgentServerStepOverhead|AgentTokenPassThrough|AgentConcurrentRuns|ProtocolTokenPassThrough|Protocol1000Subscribers|CancelBlockedRun|CrossReplicaCancel|SmallStorePutUnderLargePuts|TaskStepEventLatency|TaskFanOut200|RunsWaitTracing|AgentRunTracing
SERVER_BENCH_PACKAGES = ./internal/agent/ ./internal/protostream/ ./internal/runs/ ./internal/store/ ./internal/subagents/ ./internal/tracing/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/storage/ ./internal/httpapi/
	$(GO) test -run '^$$' -bench '$(SERVER_BENCH)' -benchmem $(SERVER_BENCH_PACKAGES)
	$(GO) run ./cmd/loadgen -scenario all

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRequestDecoding -fuzztime 60s ./internal/httpapi/
