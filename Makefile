# Everything here needs only Go and, for the database, the PostgreSQL server
# binaries (initdb, postgres): cairnd and the tests start private clusters
# from them. Set DATABASE_URL to run cairnd against a server of your own.

GO          ?= go
BIN         := bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCH_FLAGS ?=

.DEFAULT_GOAL := help

.PHONY: help build run test bench lint fuzz clean

help: ## Show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build every command (cairnd, ...) into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

run: ## Build and run cairnd serve (embedded PostgreSQL in .cairn/ unless DATABASE_URL is set)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/cairnd ./cmd/cairnd
	$(BIN)/cairnd serve

test: ## Run every test, all packages sharing one private PostgreSQL cluster
	$(GO) run ./internal/testdb/withcluster $(GO) test -count=1 -timeout 20m ./...

bench: ## Measure the performance targets and print them as JSON (flags: BENCH_FLAGS=...)
	$(GO) run ./cmd/cairn-bench $(BENCH_FLAGS)

lint: ## Check formatting, go vet and staticcheck
	@unformatted="$$(find . \( -name .git -o -name node_modules \) -prune -o -name '*.go' -print | xargs gofmt -l)"; \
	if [ -n "$$unformatted" ]; then echo "not gofmt-ed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fuzz: ## Fuzz the service descriptor parser for 20 s
	@if [ -d domain/ocl ]; then \
		$(GO) test -run='^$$' -fuzz=FuzzParseValidate -fuzztime=20s ./domain/ocl/; \
	else \
		echo "domain/ocl does not exist: nothing to fuzz"; \
	fi

clean: ## Remove build output (never the data in .cairn/)
	rm -rf $(BIN)
