# Portcullis: kube-apiserver with this distribution's admission plugins compiled in.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := build

OUT_DIR  ?= _output
BIN_DIR  := $(abspath $(OUT_DIR)/bin)
GO       ?= go
# Reproducible by default: the build date is the last commit's unless the caller sets one.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH

# Integration suites start real servers; give them room, and never cache their results.
INTEGRATION_TIMEOUT ?= 20m
UNIT_PACKAGES        = $(shell $(GO) list ./... | grep -v /test/integration/)
STAGING_API          = staging/src/github.com/portcullis-k8s/api

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the version-stamped kube-apiserver into _output/bin
	@mkdir -p $(BIN_DIR)
	$(GO) build -ldflags "$$(build/version.sh)" -o $(BIN_DIR)/kube-apiserver ./cmd/kube-apiserver
	@echo "built $(BIN_DIR)/kube-apiserver: $$($(BIN_DIR)/kube-apiserver --version)"

.PHONY: etcd
etcd: ## build etcd at the version Kubernetes pins into _output/bin
	@mkdir -p $(BIN_DIR)
	$(GO) build -o $(BIN_DIR)/etcd go.etcd.io/etcd/server/v3

.PHONY: stock
stock: ## build stock kube-apiserver from the same module graph (the drop-in yardstick)
	@mkdir -p $(BIN_DIR)
	$(GO) build -o $(BIN_DIR)/kube-apiserver-stock k8s.io/kubernetes/cmd/kube-apiserver

.PHONY: kube-controller-manager
kube-controller-manager: ## build kube-controller-manager from the same module graph (for make run)
	@mkdir -p $(BIN_DIR)
	$(GO) build -o $(BIN_DIR)/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager

.PHONY: local-up
local-up:
	@mkdir -p $(BIN_DIR)
	$(GO) build -o $(BIN_DIR)/local-up ./hack/local-up

.PHONY: run
run: build etcd kube-controller-manager local-up ## a local control plane on 127.0.0.1 until Ctrl-C (RUN_DIR, API_PORT, ETCD_PORT, ETCD_PEER_PORT, KCM_PORT)
	@PORTCULLIS_BIN_DIR=$(BIN_DIR) exec $(BIN_DIR)/local-up

.PHONY: build-test-binaries
build-test-binaries: build etcd stock kube-controller-manager local-up ## everything the integration suites run

.PHONY: test
test: test-unit test-integration ## unit and integration tests (what CI runs)

.PHONY: test-unit
test-unit: ## unit tests
	$(GO) test $(UNIT_PACKAGES)

.PHONY: test-integration
test-integration: build-test-binaries ## integration tests: real etcd, real servers
	PORTCULLIS_BIN_DIR=$(BIN_DIR) $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) ./test/integration/...

.PHONY: bench
bench: ## Go benchmarks of the plugins
	$(GO) test -run '^$$' -bench . -benchmem ./plugin/...

.PHONY: verify
verify: ## gofmt, go vet, go.mod tidiness and pins, generated code
	hack/verify-gofmt.sh
	$(GO) vet ./...
	cd $(STAGING_API) && $(GO) vet ./...
	hack/verify-kube-version.sh
	hack/verify-codegen.sh

.PHONY: clean
clean: ## remove _output (the Go build cache is kept warm on purpose)
	rm -rf $(OUT_DIR)
