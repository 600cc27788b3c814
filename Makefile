# Everything here needs only Go and, for the database, the PostgreSQL server
# binaries (initdb, postgres): cairnd and the tests start private clusters
# from them. Set DATABASE_URL to run cairnd against a server of your own.

GO          ?= go
BIN         := bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCH_FLAGS ?=
FUZZTIME    ?= 20s
NPM         ?= npm
WEB_DIST    := web/static/dist/index.html
WEB_SRC     := $(shell find web/src -type f 2>/dev/null) web/index.html web/vite.config.ts web/tsconfig.json

.DEFAULT_GOAL := help

.PHONY: help build run web test test-web test-e2e bench lint fuzz clean check-tree

help: ## Show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build every command (cairnd, ...) into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

run: ## Build the portal, cairnd and cairn-agent, and run cairnd serve with one local agent enrolled to it (embedded PostgreSQL in .cairn/ unless DATABASE_URL is set)
	@if command -v $(NPM) >/dev/null 2>&1; then $(MAKE) --no-print-directory web; \
	else echo "npm not found: cairnd will serve a page that says how to build the portal" >&2; fi
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/cairnd ./cmd/cairn-agent ./cmd/cairn
	$(BIN)/cairnd serve --local-agent $(BIN)/cairn-agent

web: $(WEB_DIST) ## Build the portal into web/static/dist, which cairnd embeds (needs Node.js and npm)

# npm ci installs exactly the locked versions and never rewrites the lock
# file, so building the portal leaves the tree as it was. The lock lists the
# optional packages of every platform, as npm install writes it.
web/node_modules/.package-lock.json: web/package-lock.json web/package.json
	cd web && $(NPM) ci --no-audit --no-fund
	@touch $@

$(WEB_DIST): web/node_modules/.package-lock.json $(WEB_SRC)
	cd web && $(NPM) run build

test: ## Run every test: Go packages sharing one private PostgreSQL cluster, the fuzzers for 10 s each, then the portal's (test-web)
	$(MAKE) --no-print-directory check-tree
	$(GO) run ./internal/testdb/withcluster $(GO) test -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=500x
	$(MAKE) --no-print-directory test-web

test-web: web ## The portal's unit tests, then its pages and its flows on a real cairnd and agent in headless Chromium
	cd web && $(NPM) test
	web/e2e/ensure-chromium.sh
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/cairnd ./cmd/cairn-agent
	cd web && node --test --test-concurrency=1 e2e/pages.test.mjs e2e/cairnd.test.mjs e2e/scale.test.mjs

test-e2e: web ## Only the portal's flows on a real cairnd and agent (make test runs them too)
	web/e2e/ensure-chromium.sh
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...
	cd web && node --test e2e/cairnd.test.mjs

bench: ## Measure the performance targets and print them as JSON (flags: BENCH_FLAGS=...); redraws docs/performance/fleet.svg
	cd cmd/cairn-bench/peers && npm ci --no-audit --no-fund --silent
	$(GO) run ./cmd/cairn-bench -chart docs/performance/fleet.svg $(BENCH_FLAGS)

lint: ## Check formatting, go vet and staticcheck
	@unformatted="$$(find . \( -name .git -o -name node_modules \) -prune -o -name '*.go' -print | xargs gofmt -l)"; \
	if [ -n "$$unformatted" ]; then echo "not gofmt-ed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fuzz: ## Fuzz the service descriptor parser and validator, then the GraphQL endpoint over HTTP (FUZZTIME each, default 20s; make test runs 500 inputs each)
	$(GO) test -run='^$$' -fuzz=FuzzParseValidate -fuzztime=$(FUZZTIME) ./domain/ocl/
	$(GO) run ./internal/testdb/withcluster $(GO) test -run='^$$' -fuzz=FuzzGraphQLHTTP -fuzztime=$(FUZZTIME) ./graph/

check-tree: ## Check that make web and make build leave every file git knows as it was
	@if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then echo "not a git checkout: check-tree skipped"; exit 0; fi; \
	before="$$(git status --porcelain)"; \
	$(MAKE) --no-print-directory web build >/dev/null || exit 1; \
	after="$$(git status --porcelain)"; \
	if [ "$$before" != "$$after" ]; then \
		echo "make web build changed the tree. Before:"; echo "$$before"; echo "After:"; echo "$$after"; exit 1; \
	fi; echo "make web build left the tree as it was"

clean: ## Remove build output (never the data in .cairn/)
	rm -rf $(BIN) web/static/dist
