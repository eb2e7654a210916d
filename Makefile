# Portcullis: kube-apiserver with this distribution's admission plugins compiled in.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := build

# The supported Kubernetes minors, oldest first (releases/minors, the one list). The newest is
# the default build, pinned by go.mod; KUBE_MINOR=1.N builds and tests another with its own
# pins (releases/1.N/go.mod through -modfile) and the files of build tag kube1.N, into
# _output/1.N. GOFLAGS carries both, so every go command a test or script runs gets them too.
# releases/preview, when present, names the next minor's pre-release lane (docs/registry.md,
# "Adding a minor"): built and tested like an older minor (KUBE_MINOR=1.N), never released.
KUBE_MINORS   := $(shell cat releases/minors)
KUBE_PREVIEW  := $(shell cat releases/preview 2>/dev/null)
DEFAULT_MINOR := $(lastword $(KUBE_MINORS))
KUBE_MINOR    ?= $(DEFAULT_MINOR)
ifeq ($(filter $(KUBE_MINOR),$(KUBE_MINORS) $(KUBE_PREVIEW)),)
$(error KUBE_MINOR=$(KUBE_MINOR) is not a supported minor (releases/minors: $(KUBE_MINORS)) nor the preview (releases/preview: $(or $(KUBE_PREVIEW),none)))
endif
# A preview is never released.
NOT_PREVIEW = $(if $(filter $(KUBE_MINOR),$(KUBE_PREVIEW)),$(error $(KUBE_MINOR) is the preview lane (releases/preview): it is built and tested, never released))
export PORTCULLIS_KUBE_MINOR := $(KUBE_MINOR)
# OUT_ROOT holds every minor's outputs: the default minor's in it, the others' in a
# directory of their own beneath (OUT_DIR), so sub-makes of several minors never share one.
OUT_ROOT ?= _output
ifeq ($(KUBE_MINOR),$(DEFAULT_MINOR))
GOMOD    := go.mod
OUT_DIR  := $(OUT_ROOT)
else
GOMOD    := releases/$(KUBE_MINOR)/go.mod
OUT_DIR  := $(OUT_ROOT)/$(KUBE_MINOR)
MINOR_GOFLAGS := -modfile=$(abspath $(GOMOD)) -tags=kube$(KUBE_MINOR)
endif
BIN_DIR  := $(abspath $(OUT_DIR)/bin)
GO       ?= go
# Reproducible by default: the build date is the last commit's unless the caller sets one.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH

# The Go toolchain: the minor's go.mod toolchain line, never older than the one upstream's
# release of that patch declares (docs/compatibility.md, "Go toolchain"; the go line and
# godebug settings are upstream's). Machines come with GOTOOLCHAIN=local, which ignores that
# line: the export makes every go command of the minor's build, tests, scripts and release use
# it, for every module of the repository (the go command fetches it through the module proxy
# once when it is not the machine's own).
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' $(GOMOD))

# One build configuration for everything - binaries, tests and the release - so a cold cache
# compiles Kubernetes once: static (no cgo) and -trimpath, as release binaries must be.
export CGO_ENABLED := 0
# A sub-make of another minor inherits its parent's GOFLAGS: the minor's own replace them.
export GOFLAGS := $(strip $(filter-out -trimpath -modfile=% -tags=kube%,$(GOFLAGS)) -trimpath $(MINOR_GOFLAGS))
# The repository's other modules (build/image, build/licenses) have go.mod files of their
# own, whatever the minor.
OTHER_MODULE_GOFLAGS := GOFLAGS=-trimpath

# The long targets run their parts as stages (hack/stage.sh): each prints its minutes as it
# ends, so that every CI log shows where the time goes.
STAGE := hack/stage.sh

# Integration suites start real servers; give them room, and never cache their results.
INTEGRATION_TIMEOUT ?= 20m
UNIT_PACKAGES        = $(shell $(GO) list ./... | grep -v -e /test/integration/ -e /test/release$$ -e /test/upgrade$$ -e /test/node$$)
STAGING_API          = staging/src/github.com/portcullis-k8s/api

# Every build of ./cmd/kube-apiserver (make build, the tests' binary, the release) compiles
# with cmd/kube-apiserver/default.pgo: go build's default -pgo=auto takes a main package's
# default.pgo. make pgo-profile regenerates it from the documented workload (docs/pgo.md).
PGO_PROFILE := cmd/kube-apiserver/default.pgo
PGO_FLAG    := -pgo=$(abspath $(PGO_PROFILE))

# The binaries the integration suites run besides ours (stock, kube-controller-manager, etcd,
# local-up) and the integration and release suites compile with our binary's profile too, as
# the unit tests do: one compiled form of Kubernetes's packages serves them all, where
# compiling them without it would compile Kubernetes a second time on a cold cache. A profile
# changes how fast code runs, never what it does: stock's binary is still stock's. make bench
# builds stock without one (BUILD_PGO empty), like upstream's release.
BUILD_PGO ?=

# With -pgo, go test compiles again, as a copy for each test binary, every dependency that no
# non-test file of the listed packages reaches: for packages of test files only, such as
# test/release, test/upgrade or an integration suite, that is the whole of Kubernetes, once per
# test binary, minutes on a cold cache (go list -test -deps shows the copies as "p [q.test]").
# Listing the integration framework (no tests of its own) beside them makes its dependencies,
# most of Kubernetes, reached, and so compiled once and shared; ./test/integration/... lists it
# already. Every go test -pgo of such packages lists it, and make verify-pins checks each
# listing below (hack/verify-pgo-listings.sh).
PGO_SHARED_DEPS := ./test/integration/framework
INTEGRATION_TESTS       := ./test/integration/...
RELEASE_TESTS           := ./test/release/ $(PGO_SHARED_DEPS)
UPGRADE_TESTS           := ./test/upgrade/ $(PGO_SHARED_DEPS)
NODE_TESTS              := ./test/node/ $(PGO_SHARED_DEPS)

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the version-stamped kube-apiserver into _output/bin
	@mkdir -p $(BIN_DIR)
	$(GO) build -ldflags "$$(build/version.sh)" -o $(BIN_DIR)/kube-apiserver ./cmd/kube-apiserver
	@echo "built $(BIN_DIR)/kube-apiserver: $$($(BIN_DIR)/kube-apiserver --version)"

# The release (build/release.sh): static binaries, SHA256SUMS and an OCI image, every byte
# fixed by the commit and SOURCE_DATE_EPOCH. The image builder is its own Go module, build/image.
RELEASE_DIR       ?= $(OUT_DIR)/release
RELEASE_PLATFORMS := linux/amd64 linux/arm64

.PHONY: release
release: ## every supported minor's release (static kube-apiserver for linux/amd64 and linux/arm64, SHA256SUMS, SBOMs and an OCI image): _output/release for the newest, _output/<minor>/release for the others
	for minor in $(KUBE_MINORS); do $(MAKE) --no-print-directory KUBE_MINOR=$$minor release-minor; done

.PHONY: release-minor
release-minor: ## the release of KUBE_MINOR (default: the newest) alone, into its RELEASE_DIR
	$(NOT_PREVIEW)
	GO='$(GO)' build/release.sh $(RELEASE_DIR) $(RELEASE_PLATFORMS)

# RECORD_RELEASE_TESTS=yes records the release tests' outcomes in the minor's records (an older
# minor's release is tested there alone: docs/compatibility.md's table reads them).
.PHONY: verify-release
verify-release: $(if $(RECORD_RELEASE_TESTS),testrecord) ## build the release twice into two directories; fail unless byte-identical with RELEASE_PLATFORMS (both, unless named) in the index
	$(NOT_PREVIEW)
	$(if $(RECORD_RELEASE_TESTS),RELEASE_TEST_RECORD='$(TESTRECORD) -run $(RUN_ID) -o $(RECORD_DIR)/release.tsv') GO='$(GO)' build/verify-release.sh $(VERIFY_RELEASE_FLAGS) $(OUT_DIR)/verify-release $(RELEASE_PLATFORMS)

# The older minors' releases for linux/amd64. The oldest is built twice, whole,
# and compared: an older minor's packaging has paths of its own (the licence texts read from a
# copy of the tree with its go.mod in place, the kit renamed to it, the SBOM under -modfile).
# The others are packaged once, their binaries built twice and compared
# (build/verify-release.sh --package-once). Each release is then checked: image index,
# SHA256SUMS, the kit naming it. An older minor's second platform would cost a cold compile of
# its Kubernetes graph for arm64: make verify-release KUBE_MINOR=1.N builds both, twice.
.PHONY: verify-release-minors
verify-release-minors: ## the older minors' releases for linux/amd64: the oldest built twice and compared, the others packaged once with their binaries built twice
	for minor in $(OLDER_MINORS); do \
	  flags=$$([[ $$minor == $(firstword $(OLDER_MINORS)) ]] || echo --package-once); \
	  $(STAGE) $$minor $(MAKE) --no-print-directory KUBE_MINOR=$$minor RELEASE_PLATFORMS=linux/amd64 VERIFY_RELEASE_FLAGS=$$flags RECORD_RELEASE_TESTS=yes verify-release; \
	done

# make test checks a release of linux/amd64 only; verify-release builds both
# platforms twice (CI runs it for linux/amd64 only: docs/release.md). TEST_RELEASE_DIR.inputs
# names what it was built from (portcullis::release_inputs), so that CI takes it as the first
# of verify-release's two builds (verify-release-after-test).
TEST_RELEASE_DIR      := $(OUT_DIR)/test-release
TEST_RELEASE_PLATFORM := linux/amd64

.PHONY: verify-release-after-test
verify-release-after-test: ## the release make test-release built (linux/amd64), built once more and compared, then checked (CI runs it after make test)
	GO='$(GO)' build/verify-release.sh --against $(TEST_RELEASE_DIR) $(OUT_DIR)/verify-release $(TEST_RELEASE_PLATFORM)

.PHONY: test-release
test-release: install-test-deps testrecord ## release tests: amd64 release rebuilt byte-identical, image builder, image contents, skopeo, systemd-analyze
	$(NOT_PREVIEW)
	rm -rf $(TEST_RELEASE_DIR) $(TEST_RELEASE_DIR).inputs
	inputs=$$(GO='$(GO)' bash -c 'source hack/lib/init.sh && portcullis::release_inputs $(TEST_RELEASE_PLATFORM)') && \
	  GO='$(GO)' build/release.sh $(TEST_RELEASE_DIR) $(TEST_RELEASE_PLATFORM) && echo "$$inputs" >$(TEST_RELEASE_DIR).inputs
	GO='$(GO)' build/verify-release.sh --binaries $(TEST_RELEASE_DIR) $(OUT_DIR)/verify-release-binaries $(TEST_RELEASE_PLATFORM)
	$(OTHER_MODULE_GOFLAGS) $(GO) -C build/image test ./...
	PORTCULLIS_RELEASE_DIR=$(abspath $(TEST_RELEASE_DIR)) PORTCULLIS_RELEASE_PLATFORMS=$(TEST_RELEASE_PLATFORM) $(GO) test -json $(PGO_FLAG) -count=1 $(RELEASE_TESTS) $(call record,release)

# Upstream's binaries - stock kube-apiserver (the drop-in yardstick), kube-controller-manager,
# kubeadm, kubectl - are built from releases/<minor>/upstream, a module that requires
# k8s.io/kubernetes alone, so that they link upstream's own module graph, not ours; etcd from
# releases/<minor>/etcd, the version that minor's kubeadm deploys. Both are written by
# hack/update-kube-version.sh.
UPSTREAM_MODULE := releases/$(KUBE_MINOR)/upstream
ETCD_MODULE     := releases/$(KUBE_MINOR)/etcd
UPSTREAM_GO      = $(OTHER_MODULE_GOFLAGS) $(GO) -C $(UPSTREAM_MODULE)

.PHONY: etcd
etcd: ## build the etcd server that KUBE_MINOR's kubeadm deploys (releases/<minor>/etcd) into _output/bin
	@mkdir -p $(BIN_DIR)
	$(OTHER_MODULE_GOFLAGS) $(GO) -C $(ETCD_MODULE) build $(BUILD_PGO) -o $(BIN_DIR)/etcd go.etcd.io/etcd/server/v3

# Upstream's binaries report the Kubernetes version the minor's go.mod requires, stamped as
# upstream's release builds stamp it: `kubectl version` fails on an unstamped client's
# version, and kubeadm reads the API server's and the kubelets' versions.
KUBE_VERSION := $(shell sed -n 's|^[[:space:]]*k8s\.io/kubernetes \(v[0-9.]*\(-[a-z]*\.[0-9]*\)\{0,1\}\)$$|\1|p' $(GOMOD))
KUBE_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=$(patsubst v%,%,$(word 1,$(subst ., ,$(KUBE_VERSION)))) -X $(pkg).gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))))

.PHONY: stock
stock: ## build stock kube-apiserver from upstream's own module graph (releases/<minor>/upstream: the drop-in yardstick)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN_DIR)/kube-apiserver-stock k8s.io/kubernetes/cmd/kube-apiserver

.PHONY: kube-controller-manager
kube-controller-manager: ## build kube-controller-manager from upstream's own module graph (for make run)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN_DIR)/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager

.PHONY: kube-scheduler
kube-scheduler: ## build kube-scheduler from upstream's own module graph (for the real node's image, test/node)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN_DIR)/kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler

.PHONY: agnhost
agnhost: ## build upstream's e2e test image program, agnhost, from upstream's module graph (a webhook served by a pod on the real node, test/node)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -o $(BIN_DIR)/agnhost k8s.io/kubernetes/test/images/agnhost

# CoreDNS is its own Go module: the version KUBE_MINOR's kubeadm deploys (its CoreDNSVersion)
# is built with its own module graph (go install module@version), as its release is.
COREDNS_VERSION = $(shell sed -n 's/^\tCoreDNSVersion = "\(v[0-9.]*\)"$$/\1/p' "$$($(UPSTREAM_GO) mod download -json k8s.io/kubernetes | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p')/cmd/kubeadm/app/constants/constants.go")

.PHONY: coredns
coredns: ## build the CoreDNS that KUBE_MINOR's kubeadm deploys, from its own module (kubeadm's DNS addon on the real node, test/node)
	@mkdir -p $(BIN_DIR)
	@test -n "$(COREDNS_VERSION)" || { echo "no CoreDNSVersion in KUBE_MINOR=$(KUBE_MINOR)'s kubeadm constants" >&2; exit 1; }
	GOBIN=$(BIN_DIR) $(OTHER_MODULE_GOFLAGS) $(GO) install github.com/coredns/coredns@$(COREDNS_VERSION)

.PHONY: kubelet
kubelet: ## build the kubelet from upstream's own module graph (for the real node, test/node)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN_DIR)/kubelet k8s.io/kubernetes/cmd/kubelet

.PHONY: kubeadm
kubeadm: ## build kubeadm's CLI from upstream's own module graph (the docs tests run docs/operating.md's kubeadm commands with it)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN_DIR)/kubeadm k8s.io/kubernetes/cmd/kubeadm

.PHONY: kubectl
kubectl: ## build kubectl from upstream's own module graph (the docs tests run the documented kubectl commands with it)
	@mkdir -p $(BIN_DIR)
	$(UPSTREAM_GO) build $(BUILD_PGO) -ldflags '$(KUBE_LDFLAGS)' -o $(BIN_DIR)/kubectl k8s.io/kubernetes/cmd/kubectl

.PHONY: local-up
local-up:
	@mkdir -p $(BIN_DIR)
	$(GO) build $(BUILD_PGO) -o $(BIN_DIR)/local-up ./hack/local-up

.PHONY: run
run: build etcd kube-controller-manager local-up ## a local control plane on 127.0.0.1 until Ctrl-C (RUN_DIR, API_PORT, ETCD_PORT, ETCD_PEER_PORT, KCM_PORT, PORTCULLIS_PROMETHEUS_URL)
	@PORTCULLIS_BIN_DIR=$(BIN_DIR) exec $(BIN_DIR)/local-up

# Our server with the tag portcullis_unbounded_caches: InitialResources's caches keep whatever
# they are given. The InitialResources flood runs on it to show its proof of their bounds can
# fail (internal/soak/irflood.go). Never released.
.PHONY: unbounded-caches
unbounded-caches:
	@mkdir -p $(BIN_DIR)
	$(GO) build -tags "kube$(KUBE_MINOR) portcullis_unbounded_caches" -o $(BIN_DIR)/kube-apiserver-unbounded-caches ./cmd/kube-apiserver

.PHONY: build-test-binaries
build-test-binaries: BUILD_PGO = $(PGO_FLAG)
build-test-binaries: build unbounded-caches etcd stock kube-controller-manager local-up kubeadm kubectl ## everything the integration suites run

# make test runs its suites as stages, each printing its minutes. The integration suites mostly
# wait (servers starting, conditions polled), so the release tests, which compute (a link, the
# licence texts, the SBOM, the image), run beside them, niced (hack/beside.sh); what both need
# is made first, once.
.PHONY: test
test: ## unit, race, fuzz, integration and release tests (what CI runs), each stage timed
	$(STAGE) unit $(MAKE) --no-print-directory test-unit
	$(STAGE) race $(MAKE) --no-print-directory test-race
	$(STAGE) fuzz $(MAKE) --no-print-directory test-fuzz
	$(STAGE) test-binaries $(MAKE) --no-print-directory build-test-binaries install-test-deps testrecord
	hack/beside.sh integration '$(MAKE) --no-print-directory test-integration' release '$(MAKE) --no-print-directory test-release'

.PHONY: install-test-deps
install-test-deps: ## the Debian packages the integration and release tests run, when missing (hack/install-test-deps.sh; needs root)
	hack/install-test-deps.sh

# Every suite's go test writes -json through hack/testrecord (built under a name of its own,
# then renamed: make test builds it for two suites at once), which prints what go test
# prints without it and records each test's outcome under RECORD_DIR, one directory per
# minor: docs/compatibility.md's table of what is tested on each minor is written from those
# records (make compatibility) and held to them (make verify-compatibility, in .ci/run).
# Each record names the sources its run saw (portcullis::run_id: the commit, and a digest of
# any uncommitted change or untracked file): the page is written only from records of one.
RECORD_DIR := $(abspath $(OUT_ROOT)/test-records/$(KUBE_MINOR))
TESTRECORD := $(BIN_DIR)/testrecord
RUN_ID     := $(shell bash -c 'source hack/lib/init.sh && portcullis::run_id')
record      = | $(TESTRECORD) -run '$(RUN_ID)' -o $(RECORD_DIR)/$(1).tsv

.PHONY: testrecord
testrecord:
	@mkdir -p $(BIN_DIR) $(RECORD_DIR)
	$(GO) build -o $(TESTRECORD).$$$$ ./hack/testrecord && mv -f $(TESTRECORD).$$$$ $(TESTRECORD)

# The unit tests run as shipped: static, no cgo, compiled with the binary's PGO profile, so
# that they share its compiled packages.
.PHONY: test-unit
test-unit: testrecord ## unit tests of every package
	$(GO) test -json $(PGO_FLAG) $(UNIT_PACKAGES) $(call record,unit)

# The race detector runs on the packages that run code concurrently and have tests: the webhook
# dispatch (breaker, budget, shadow calls), the trace and enforcement decorators, admission
# readiness, the plugins that keep informer-fed caches, the harnesses' balancer and the docs'
# runner. -race needs
# cgo, so a C compiler, and compiles these packages' whole dependency graph again,
# instrumented: each package named here costs a cold make test the compile of what it links, so
# the list is chosen, not derived. Left out: what links the plugin registry or the control
# plane (the command, preflight, pkg/admission, the registries' REST wiring, the bench and soak
# harnesses and the process supervisor they share, which has no tests of its own), which would
# double that graph; and every package with no goroutine, lock or channel of its own.
RACE_PACKAGES = $(addprefix $(MODULE)/,plugin/pkg/admission/webhook plugin/pkg/admission/webhook/mutating \
  plugin/pkg/admission/webhook/validating pkg/admission/trace pkg/admission/enforcement \
  plugin/pkg/admission/internal/readiness plugin/pkg/admission/initializers plugin/pkg/admission/initialresources \
  plugin/pkg/admission/persistentvolumelabel plugin/pkg/admission/podpreset plugin/pkg/admission/podsecuritypolicy \
  internal/balancer test/docs)
MODULE        = github.com/portcullis-k8s/portcullis

.PHONY: test-race
test-race: testrecord ## unit tests of the packages that run code concurrently, under the race detector (needs a C compiler)
	CGO_ENABLED=1 $(GO) test -json -race $(RACE_PACKAGES) $(call record,unit-race)

# Each Go fuzz target (func FuzzXxx beside the unit tests) fuzzes for FUZZTIME; a crasher
# fails the run and is written under the package's testdata/fuzz/, where it stays as a seed.
# The instrumented build is a cache configuration of its own: fuzzing compiles every
# dependency again. make test's smoke run leaves out the packages whose tests depend on
# k8s.io/apiserver's admission (FUZZ_SMOKE_WITHOUT): instrumenting the API server's stack costs
# minutes of a cold make test. Their seeds still run as unit tests, and make soak fuzzes every
# package.
FUZZTIME ?= 10s
FUZZ_SMOKE_WITHOUT = k8s.io/apiserver/pkg/admission

.PHONY: test-fuzz
test-fuzz: ## Go fuzz targets of the packages without the API server's stack, each for FUZZTIME (10s); FUZZ_REPORT=<file> writes executions and time per target
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' FUZZ_PACKAGES='$(UNIT_PACKAGES)' FUZZ_WITHOUT='$(FUZZ_SMOKE_WITHOUT)' hack/fuzz.sh

.PHONY: test-integration
test-integration: build-test-binaries install-test-deps testrecord ## integration tests: real etcd, real servers, a real Prometheus
	PORTCULLIS_BIN_DIR=$(BIN_DIR) $(GO) test -json $(PGO_FLAG) -count=1 -timeout $(INTEGRATION_TIMEOUT) $(INTEGRATION_TESTS) $(call record,integration)

# The older supported minors (releases/minors but the default), each from its own pins and
# build tag, into _output/<minor>. What differs between minors is upstream's code and the few
# files of a minor's build tag (kube1.N), so an older minor runs:
# - a compile of every package and test, integration suites included (go list -export -test,
#   which compiles them and links nothing): everything compiles against that minor's Kubernetes;
# - the unit tests of MINOR_UNIT_PACKAGES (portcullis::minor_unit_packages), with the vet
#   checks go test runs: the packages whose build, tests included, reaches a file of a minor's
#   build tag, and those that hold something of ours to the minor's upstream (MINOR_UNIT_ALSO),
#   but for the harnesses that run on the newest minor only (MINOR_UNIT_NEWEST_ONLY). go vet of
#   the other packages is the newest minor's (make test's go test, make verify): its analysis
#   of every package costs minutes of CPU per minor (docs/ci.md says what that leaves out);
# - the integration suites of the API server and of the webhook dispatch: our plugins through a
#   real server, chain parity and served APIs against that minor's stock (built from upstream's
#   graph), the module graph, the rollback to that minor's stock, the deploy kit rendered by
#   that minor's kubeadm, on the etcd that minor's kubeadm deploys; upstream's dispatch and ours
#   through real webhooks (the minor's adapter files live there);
# then the upgrade across every minor, one etcd, each minor's binary in turn (test/upgrade).
# The race detector, the fuzz smoke and the other integration suites run on the newest minor;
# make verify-release-minors runs the release's binary, SBOM, licence and image tests on each
# older minor's release.
# .ci/run runs it after make test.
OLDER_MINORS           := $(filter-out $(DEFAULT_MINOR),$(KUBE_MINORS))
MINOR_INTEGRATION_TESTS := ./test/integration/apiserver/ ./test/integration/webhook/ $(PGO_SHARED_DEPS)
# pkg/admission's drift guards read the minor's upstream order and defaults
# (testdata/<minor>/); pkg/generated/openapi's test holds our OpenAPI definitions beside the
# minor's upstream ones.
MINOR_UNIT_ALSO        := pkg/admission pkg/generated/openapi
# make bench, make soak and make pgo-profile run on the newest minor only.
MINOR_UNIT_NEWEST_ONLY := hack/bench hack/soak hack/pgo-profile internal/bench internal/soak
# Every package and test compiled against the minor, nothing linked, nothing vetted.
COMPILE_EVERY_PACKAGE   = $(GO) list $(PGO_FLAG) -export -test ./... >/dev/null
# A recipe's command (make's $(shell) does not see the minor's exported GOFLAGS).
MINOR_UNIT_PACKAGES     = GO='$(GO)' bash -c 'source hack/lib/init.sh && portcullis::minor_unit_packages $(addprefix $(MODULE)/,$(MINOR_UNIT_ALSO)) -- $(filter-out $(addprefix $(MODULE)/,$(MINOR_UNIT_NEWEST_ONLY)),$(UNIT_PACKAGES))'

.PHONY: test-minors
test-minors: ## every older supported minor: every package and test compiled, the unit tests of the packages whose build differs per minor, the API server's and the webhook dispatch's integration suites; then the upgrade across minors
	for minor in $(OLDER_MINORS); do $(STAGE) $$minor $(MAKE) --no-print-directory KUBE_MINOR=$$minor test-minor; done
	$(STAGE) upgrade $(MAKE) --no-print-directory test-upgrade

.PHONY: test-minor
test-minor: build-minor-test-binaries testrecord
	$(COMPILE_EVERY_PACKAGE)
	packages=$$($(MINOR_UNIT_PACKAGES)); $(GO) test -json $(PGO_FLAG) $$packages $(PGO_SHARED_DEPS) $(call record,unit)
	PORTCULLIS_BIN_DIR=$(BIN_DIR) $(GO) test -json $(PGO_FLAG) -count=1 -timeout $(INTEGRATION_TIMEOUT) $(MINOR_INTEGRATION_TESTS) $(call record,integration)

# What make test-minors builds, compiled ahead into Go's build cache: each older minor's
# binaries, its packages and tests (COMPILE_EVERY_PACKAGE), and the same listings as
# test-minor's go test commands (with -pgo, which packages go test compiles depends on what it
# lists beside them: PGO_SHARED_DEPS). .ci/run runs it in the
# background at the lowest priority, beside make test: it takes the CPU the foreground leaves
# idle - while servers start, links run on one core, tests wait - and so make test-minors finds
# its packages compiled. Alone, it is just the compile make test-minors would do.
.PHONY: prebuild-minors
prebuild-minors: ## compile ahead, into Go's build cache, what make test-minors builds (.ci/run runs it in the background beside make test)
	for minor in $(OLDER_MINORS); do $(MAKE) --no-print-directory KUBE_MINOR=$$minor prebuild-minor; done

.PHONY: prebuild-minor
prebuild-minor: build-minor-test-binaries
	$(COMPILE_EVERY_PACKAGE)
	packages=$$($(MINOR_UNIT_PACKAGES)); $(GO) list $(PGO_FLAG) -export -test $$packages $(PGO_SHARED_DEPS) >/dev/null
	$(GO) list $(PGO_FLAG) -export -test $(MINOR_INTEGRATION_TESTS) >/dev/null

# What the API server's integration suite runs, for one minor: etcd is the one its kubeadm
# deploys.
.PHONY: build-minor-test-binaries
build-minor-test-binaries: BUILD_PGO = $(PGO_FLAG)
build-minor-test-binaries: build etcd stock kube-controller-manager local-up kubeadm

# The upgrade test runs each minor's binaries, built by its test-minor (the default minor's by
# build-test-binaries): _output/<minor>/bin, _output/bin for the default.
.PHONY: test-upgrade
test-upgrade: build-test-binaries testrecord
	for minor in $(OLDER_MINORS); do $(MAKE) --no-print-directory KUBE_MINOR=$$minor build-minor-test-binaries; done
	PORTCULLIS_BIN_DIR=$(BIN_DIR) $(GO) test -json $(PGO_FLAG) -count=1 -timeout $(INTEGRATION_TIMEOUT) $(UPGRADE_TESTS) $(call record,upgrade)

# The real node (test/node, docs/node.md): containerd, runc, crictl and the CNI plugins built
# from the module proxy (test/node/build-runtime.sh, once per version, under NODE_DIR/runtime),
# the kubelet and kube-scheduler from upstream's module graph, the node's init and pause
# programs, and our kube-apiserver's image as the release builds it (build/image); the test
# builds the other images from the binaries and kubeadm runs them. It runs as root: the node
# is namespaces of its own, every process, mount, device and cgroup it made is removed when
# it ends, also after a failure, and the kernel settings the kubelet changes are put back.
NODE_DIR     := $(abspath $(OUT_ROOT)/node)
NODE_TIMEOUT ?= 50m
NODE_IMAGE    = $(NODE_DIR)/kube-apiserver-$(KUBE_MINOR).oci.tar
NODE_KIT      = $(NODE_DIR)/deploy-$(KUBE_MINOR)
# NODE_RUN picks the node's tests (go test -run): by default every TestKubeadmNode* test, not
# TestConformance (make conformance's); .ci/run runs the install, the swap and the rollback
# (TestKubeadmNode), which run no agnhost pod, so it sets NODE_AGNHOST empty.
NODE_RUN     ?= ^TestKubeadmNode
NODE_AGNHOST ?= agnhost
# NODE_UPGRADE builds what the upgrade across minors needs (build-node-upgrade-binaries);
# .ci/run, which runs no upgrade, sets it empty.
NODE_UPGRADE ?= build-node-upgrade-binaries
# The machine's node lock (test/node/nodeinit): after go test, whatever its end (a timeout
# skips the test's cleanups), nodeinit -clean removes what a node left on the host.
NODE_LOCK    := /run/portcullis-node-host/lock
# NODE_RECORD names the run's test record (RECORD_DIR/<minor>/<NODE_RECORD>.tsv).
NODE_RECORD  ?= node

.PHONY: node-runtime
node-runtime: ## build the real node's container runtime and CNI plugins (test/node/build-runtime.sh) into NODE_DIR/runtime
	hack/install-test-deps.sh --node
	GO='$(GO)' test/node/build-runtime.sh $(NODE_DIR)/runtime

.PHONY: node-image
node-image: build ## our kube-apiserver's OCI image, as the release builds it (build/image), from the binary make build wrote
	@mkdir -p $(NODE_DIR)
	version=$$(bash -c 'source hack/lib/init.sh && portcullis::version $(KUBE_MINOR)') && \
	  $(OTHER_MODULE_GOFLAGS) $(GO) -C build/image run . -version "$$version" -revision "$$(git rev-parse HEAD)" \
	    -license $(abspath LICENSE) -notice $(abspath NOTICE) -binary linux/amd64=$(BIN_DIR)/kube-apiserver -o $(NODE_IMAGE)

.PHONY: node-kit
node-kit: ## KUBE_MINOR's release's deploy kit (its deploy/, as build/release.sh writes it) into NODE_DIR/deploy-<minor>, for the real node's upgrade
	rm -rf $(NODE_KIT)
	bash -c 'source hack/lib/init.sh && portcullis::write_deploy_kit "$$(portcullis::version $(KUBE_MINOR))" $(NODE_KIT)'

# The upgrade on the real node (TestKubeadmNodeUpgrade) installs the oldest minor and
# upgrades to each next one, then to the newest minor's next Portcullis release: every older
# minor's binaries, kubelet, scheduler, CoreDNS, our image and release kit, the newest's
# CoreDNS, and node-next-release.
.PHONY: build-node-upgrade-binaries
build-node-upgrade-binaries: coredns node-next-release
	for minor in $(OLDER_MINORS); do $(MAKE) --no-print-directory KUBE_MINOR=$$minor build-node-minor-binaries; done

# The next Portcullis release on the same Kubernetes release (v1.N.P+portcullis.M+1), what an
# upgrade within one patch installs: built from this source with the next release number, its
# image and its kit, under NODE_DIR/next-release. The number, the image's tag and the kit's
# patch are what kubeadm and preflight judge in such an upgrade.
NODE_NEXT_RELEASE := $(NODE_DIR)/next-release
.PHONY: node-next-release
node-next-release:
	rm -rf $(NODE_NEXT_RELEASE) && mkdir -p $(NODE_NEXT_RELEASE)
	next=$$(bash -c 'source hack/lib/init.sh && portcullis::next_release "$$(portcullis::version $(KUBE_MINOR))"') && \
	  $(GO) build -ldflags "$$(build/version.sh $$next)" -o $(NODE_NEXT_RELEASE)/kube-apiserver ./cmd/kube-apiserver && \
	  $(OTHER_MODULE_GOFLAGS) $(GO) -C build/image run . -version "$$next" -revision "$$(git rev-parse HEAD)" \
	    -license $(abspath LICENSE) -notice $(abspath NOTICE) -binary linux/amd64=$(NODE_NEXT_RELEASE)/kube-apiserver \
	    -o $(NODE_NEXT_RELEASE)/kube-apiserver.oci.tar && \
	  bash -c 'source hack/lib/init.sh && portcullis::write_deploy_kit "$$1" $(NODE_NEXT_RELEASE)/deploy' - "$$next" && \
	  echo "$$next" >$(NODE_NEXT_RELEASE)/VERSION
	@echo "built $(NODE_NEXT_RELEASE): $$($(NODE_NEXT_RELEASE)/kube-apiserver --version)"

.PHONY: build-node-minor-binaries
build-node-minor-binaries: BUILD_PGO = $(PGO_FLAG)
build-node-minor-binaries: build-minor-test-binaries kubelet kube-scheduler coredns node-image node-kit

.PHONY: build-node-binaries
build-node-binaries: BUILD_PGO = $(PGO_FLAG)
build-node-binaries: build-test-binaries kubelet kube-scheduler $(NODE_AGNHOST) $(NODE_UPGRADE) node-runtime node-image
	$(GO) build -o $(BIN_DIR)/nodeinit ./test/node/nodeinit
	$(GO) build -o $(BIN_DIR)/pause ./test/node/pause

.PHONY: test-node
test-node: build-node-binaries testrecord ## the real node (as root): kubeadm installs stock, the swap to ours, the upgrades and the rollback as docs/operating.md says, our plugins on real pods (docs/node.md)
	@[[ -n '$(NODE_RUN)' ]] || { echo "NODE_RUN is empty: it would run every test of test/node, make conformance's too; name the tests (default ^TestKubeadmNode)" >&2; exit 2; }
	status=0; PORTCULLIS_BIN_DIR=$(BIN_DIR) PORTCULLIS_NODE_DIR=$(NODE_DIR) \
	  $(GO) test -json $(PGO_FLAG) -count=1 -timeout $(NODE_TIMEOUT) -run '$(NODE_RUN)' $(NODE_TESTS) $(call record,$(NODE_RECORD)) || status=$$?; \
	{ mkdir -p $(dir $(NODE_LOCK)) && flock -n $(NODE_LOCK) $(BIN_DIR)/nodeinit -clean; } || echo "nodeinit -clean failed, or $(NODE_LOCK) is held (a node still runs?): the node's host state may be left" >&2; \
	exit $$status

# Upstream's conformance specs on the real node (test/node TestConformance, docs/node.md):
# upstream's e2e suite and ginkgo's CLI (which runs it in parallel) built from upstream's
# module graph at the pinned version, and what the specs' images hold that is built here
# (nonewprivs, agnhost's serving certificate, busybox from its source release:
# test/node/build-busybox.sh; agnhost is make agnhost's). CONFORMANCE_PROCS are ginkgo's
# parallel processes; its [Serial] specs run one at a time after the others.
CONFORMANCE_DIR     := $(NODE_DIR)/conformance
CONFORMANCE_TIMEOUT ?= 4h
CONFORMANCE_PROCS   ?= 4

.PHONY: conformance-binaries
conformance-binaries:
	@test "$(KUBE_MINOR)" = "$(DEFAULT_MINOR)" || { echo "make conformance runs on the newest minor, $(DEFAULT_MINOR) (KUBE_MINOR=$(KUBE_MINOR))" >&2; exit 1; }
	@mkdir -p $(CONFORMANCE_DIR)
	$(UPSTREAM_GO) test -c -ldflags '$(KUBE_LDFLAGS)' -o $(CONFORMANCE_DIR)/e2e.test k8s.io/kubernetes/test/e2e
	$(UPSTREAM_GO) build -o $(CONFORMANCE_DIR)/ginkgo github.com/onsi/ginkgo/v2/ginkgo
	$(UPSTREAM_GO) build -o $(CONFORMANCE_DIR)/nonewprivs k8s.io/kubernetes/test/images/nonewprivs
	dir=$$($(UPSTREAM_GO) list -m -f '{{.Dir}}' k8s.io/kubernetes) && \
	  install -m 0644 $$dir/test/images/agnhost/porter/localhost.crt $$dir/test/images/agnhost/porter/localhost.key $(CONFORMANCE_DIR)/ && \
	  test/node/build-busybox.sh $$dir $(CONFORMANCE_DIR)

.PHONY: conformance
conformance: conformance-binaries ## upstream's [Conformance] specs of sig-api-machinery, sig-auth and sig-node on the real node (as root), on ours, and on stock those that fail on ours (docs/node.md)
	PORTCULLIS_CONFORMANCE_PROCS=$(CONFORMANCE_PROCS) $(MAKE) --no-print-directory test-node NODE_RUN='^TestConformance$$' \
	  NODE_AGNHOST=agnhost NODE_UPGRADE= NODE_TIMEOUT=$(CONFORMANCE_TIMEOUT) NODE_RECORD=conformance

# docs/compatibility.md's table of what is tested on each minor, from the records the last
# runs of make test and make test-minors left (RECORD_DIR): a tick is a row whose tests all
# passed on that minor.
COMPATIBILITY_FLAGS = -records $(OUT_ROOT)/test-records -minors releases/minors -doc docs/compatibility.md

.PHONY: compatibility
compatibility: ## rewrite docs/compatibility.md's table of what each minor's tests proved, from the last runs (make test, make test-minors)
	$(GO) run ./hack/compatibility $(COMPATIBILITY_FLAGS)

.PHONY: verify-compatibility
verify-compatibility: ## fail unless docs/compatibility.md's table is what the last runs' records give (.ci/run, after make test-minors)
	$(GO) run ./hack/compatibility -verify $(COMPATIBILITY_FLAGS)

.PHONY: bench
bench: build etcd stock ## ours vs stock kube-apiserver, a CEL policy and webhooks, side by side; rewrites docs/benchmarks.md
	$(GO) build -o $(BIN_DIR)/bench ./hack/bench
	$(BIN_DIR)/bench -go $(GO) -bin-dir $(BIN_DIR) -out docs/benchmarks.md

# make soak fuzzes first (hack/fuzz.sh, SOAK_FUZZTIME per target), then runs ours and stock
# through the load and the faults; its page includes the fuzzing report. A failed fuzz target
# is on the page too: the soak still runs, then make fails.
SOAK_FUZZTIME ?= 20s
SOAK_FUZZ_REPORT := $(abspath $(OUT_DIR)/soak/fuzz.tsv)

.PHONY: soak
soak: build unbounded-caches etcd stock ## ours and stock under load and faults (webhook, etcd, HA), loss read from etcd, fuzzing, bad inputs; rewrites docs/reliability.md
	@mkdir -p $(dir $(SOAK_FUZZ_REPORT))
	rm -f $(SOAK_FUZZ_REPORT)
	$(GO) build -o $(BIN_DIR)/soak ./hack/soak
	fuzz=0; \
	if [ -x hack/fuzz.sh ]; then GO='$(GO)' FUZZTIME=$(SOAK_FUZZTIME) FUZZ_REPORT=$(SOAK_FUZZ_REPORT) hack/fuzz.sh || fuzz=$$?; fi; \
	$(BIN_DIR)/soak -bin-dir $(BIN_DIR) -out docs/reliability.md -fuzz-report $(SOAK_FUZZ_REPORT) && exit $$fuzz

.PHONY: pgo-profile
pgo-profile: build etcd ## profile our kube-apiserver under the documented workload; rewrites cmd/kube-apiserver/default.pgo (commit it)
	$(GO) build -o $(BIN_DIR)/pgo-profile ./hack/pgo-profile
	$(BIN_DIR)/pgo-profile -go $(GO) -bin-dir $(BIN_DIR) -out $(PGO_PROFILE)

# What no compile checks: every minor's pins, its upstream and etcd modules, the staging
# module, the release counters (hack/verify-kube-version.sh), the toolchains and their table
# (hack/verify-go-toolchain.sh), the adapter files' build lines (hack/buildtags: first, so that
# a file without one is named before go vet reports what it redeclares). Seconds, and no
# compile: .ci/run runs it.
.PHONY: verify-pins
verify-pins: ## every minor's pins, toolchain and release counter, the adapter files' build lines, the go test listings' shared compile (no compile; CI runs it)
	$(GO) run ./hack/buildtags -verify
	hack/verify-kube-version.sh
	hack/verify-go-toolchain.sh
	GO='$(GO)' hack/verify-pgo-listings.sh $(PGO_FLAG) '$(UNIT_PACKAGES)' '$(INTEGRATION_TESTS)' '$(RELEASE_TESTS)' '$(UPGRADE_TESTS)' '$(NODE_TESTS)' '$(MINOR_INTEGRATION_TESTS)'

# go vet compiles with the binary's profile, and so type-checks against the packages make
# build and make test compiled (without it, a second compile of Kubernetes); a profile changes
# no type.
.PHONY: verify
verify: verify-pins ## gofmt, go vet, go.mod tidiness and pins, toolchains, release counters, build tags, generated code, NOTICE
	hack/verify-gofmt.sh
	$(GO) vet $(PGO_FLAG) ./...
	cd $(STAGING_API) && $(GO) vet ./...
	cd build/image && $(OTHER_MODULE_GOFLAGS) $(GO) vet ./... && $(OTHER_MODULE_GOFLAGS) $(GO) mod tidy -diff
	cd build/licenses && $(OTHER_MODULE_GOFLAGS) $(GO) mod tidy -diff
	hack/verify-codegen.sh
	notice=$$(mktemp) && trap 'rm -f $$notice' EXIT && hack/update-notice.sh $$notice >/dev/null && \
	  { diff -u NOTICE $$notice || { echo "NOTICE is stale: run hack/update-notice.sh" >&2; exit 1; }; }

.PHONY: clean
clean: ## remove _output (the Go build cache is kept warm on purpose)
	rm -rf $(OUT_DIR)
