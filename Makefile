# replay — make help lists the targets.
GO          ?= go
FUZZTIME    ?= 10s
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.7.0
# Every module of the repository (a nested go.mod is a module of its own).
MODULES     := $(shell find . -name go.mod -not -path './.git/*' -exec dirname {} \; | sort)

.DEFAULT_GOAL := help
# The platforms replay builds for (go build and go vet, tests included, in
# CI: a Unix-only call cannot land); the tests run on Linux.
PLATFORMS   := linux/amd64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64 freebsd/amd64
.PHONY: help build cross release test lint fuzz bench demo bigfile bigcapture mockbench mockpeers streampeers peers image

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  %-9s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/replay
	$(GO) build -buildvcs=auto -o bin/replay ./cmd/replay

cross: ## go build and go vet for every platform replay ships on; the release's dry run
	@set -e; dry=$$(mktemp -d); trap 'rm -rf "$$dry"' EXIT; \
	  RELEASE_FLAGS= RELEASE_PLATFORMS="$(PLATFORMS)" scripts/release.sh dry-run "$$dry"; \
	  for p in $(PLATFORMS); do echo "== vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; done

release: ## binaries for Linux, macOS and Windows (amd64, arm64) and SHA256SUMS in dist/ (VERSION=v1.2.3)
	scripts/release.sh $${VERSION:?give VERSION=v1.2.3} dist

test: ## run the tests of every module with the race detector
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && $(GO) test -race -count=1 ./...); done

lint: ## go vet and staticcheck on every module
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...); done

fuzz: ## run each fuzz target for FUZZTIME (default 10s)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

bench: ## run the benchmarks (hot path: 0 allocs/op)
	$(GO) test -run '^$$' -bench . -benchmem ./...

demo: ## replay the built-in traffic against the built-in demo SUT
	$(GO) run ./cmd/replay demo

bigfile: build ## 1 GiB file, 500 VUs: open time and anonymous memory (not run in CI)
	scripts/bigfile.sh bin/replay

bigcapture: build ## 1 GiB packet capture, 1M requests: import pcap's time and peak memory; TLS=1: a 200 MB TLS capture with --keylog against tshark (not run in CI)
	scripts/bigcapture.sh bin/replay

mockbench: build ## replay mock's answers a second on one core from a 100,000-pair file (wrk; not run in CI)
	scripts/mockbench.sh bin/replay

mockpeers: build ## replay mock against Hoverfly on the same 1,000 JSON exchanges: answers a second, CPU an answer (wrk, h2load; not run in CI)
	scripts/mockpeers.sh bin/replay

image: ## build the container image replay:dev (needs a Docker engine)
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine here (docker info fails); the Dockerfile builds where one runs"; exit 1; }
	docker build -t replay:dev --build-arg VERSION=$$(git describe --always --dirty 2>/dev/null || echo dev) .

streampeers: build ## replay --streams N against h2load -m N on one nginx: CPU a request, interleaved rounds (not run in CI)
	scripts/streampeers.sh bin/replay

peers: build ## compare CPU per request with wrk, k6, hey, oha... (../shared/bench)
	REPLAY_BIN=$(CURDIR)/bin/replay ../shared/bench/peers.sh
