# etcd-backup-driver — every build, generation and test step goes through here.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN      := $(CURDIR)/bin
TOOLS    := hack/tools
CONTROLLER_GEN := $(BIN)/controller-gen
GO_TEST_FLAGS ?= -count=1 -timeout 40m

.PHONY: all
all: build

##@ Generation

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code (the API mirrors and the sandbox's EtcdMember view).
	$(CONTROLLER_GEN) object paths=./api/... paths=./internal/sandbox/etcdmember/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) upstream-crds ## Regenerate CRDs (ours and the small test CRDs), RBAC and the module-served upstream CRDs.
	rm -rf config/crd/bases config/crd/external
	$(CONTROLLER_GEN) crd paths=./api/backups/... paths=./api/strategy/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/apps/... output:crd:artifacts:config=config/crd/external
	$(CONTROLLER_GEN) rbac:roleName=etcd-backup-driver paths=./internal/... output:rbac:artifacts:config=config/rbac

# Flux's HelmRelease CRD as helm-controller v1.4.0 ships it (the newest root
# module version the Go proxy serves). The etcd-operator and Cozystack CRDs in
# config/crd/upstream are vendored by hand (see its README): those projects
# are not served by the proxy.
FLUX_HELM_CONTROLLER := github.com/fluxcd/helm-controller@v1.4.0

.PHONY: upstream-crds
upstream-crds: ## Copy the released Flux HelmRelease CRD and its licence from the Go module cache into config/crd/upstream/flux.
	dir=$$(go mod download -json $(FLUX_HELM_CONTROLLER) | jq -r .Dir) && \
	install -m 0644 $$dir/config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml $$dir/LICENSE config/crd/upstream/flux/

CHARTS := charts/etcd charts/etcd-backup-driver
DRIVER_CHART := charts/etcd-backup-driver

.PHONY: chart-docs
chart-docs: ## Regenerate the charts' README parameter tables from their values.yaml.
	go run ./hack/chartdoc $(CHARTS)

.PHONY: chart-sync
chart-sync: ## Copy the generated CRDs and RBAC rules into the driver's chart.
	rm -rf $(DRIVER_CHART)/crds && mkdir -p $(DRIVER_CHART)/crds $(DRIVER_CHART)/files
	cp config/crd/bases/*.yaml $(DRIVER_CHART)/crds/
	cp config/rbac/role.yaml $(DRIVER_CHART)/files/role.yaml

.PHONY: charts
charts: chart-sync chart-docs ## Regenerate everything the charts take from elsewhere (run after manifests).

##@ Tools

$(CONTROLLER_GEN): $(TOOLS)/go.mod
	cd $(TOOLS) && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

$(BIN)/kube-apiserver: $(TOOLS)/go.mod $(TOOLS)/cmd/kube-apiserver/main.go
	cd $(TOOLS) && go build -o $@ ./cmd/kube-apiserver

$(BIN)/etcd: $(TOOLS)/go.mod $(TOOLS)/cmd/etcd/main.go
	cd $(TOOLS) && go build -o $@ ./cmd/etcd

# The garbage collector, Job and PVC-protection controllers for the sandbox
# and the suites that need ownership semantics. Built after kube-apiserver, it
# reuses most of its compiled packages.
$(BIN)/kube-controller-manager: $(TOOLS)/go.mod $(TOOLS)/cmd/kube-controller-manager/main.go
	cd $(TOOLS) && go build -o $@ ./cmd/kube-controller-manager

# etcdutl of the same etcd as $(BIN)/etcd (both from $(TOOLS)/go.mod).
$(BIN)/etcdutl: $(TOOLS)/go.mod
	cd $(TOOLS) && go build -o $@ go.etcd.io/etcd/etcdutl/v3

# etcd and etcdutl of every minor the etcd-operator may run, one module each
# ($(TOOLS)/etcd-v3.5, $(TOOLS)/etcd-v3.6: the newest patch release the Go
# proxy serves), for the staging proof in internal/staging, which restores a
# staged snapshot with each of them as the operator does.
ETCD_MINORS := v3.5 v3.6
ETCD_VERSION_BINS := $(foreach m,$(ETCD_MINORS),$(BIN)/etcd-$(m)/etcd $(BIN)/etcd-$(m)/etcdutl)

$(BIN)/etcd-%/etcd: $(TOOLS)/etcd-%/go.mod $(TOOLS)/etcd-%/cmd/etcd/main.go
	cd $(TOOLS)/etcd-$* && go build -o $@ ./cmd/etcd

$(BIN)/etcd-%/etcdutl: $(TOOLS)/etcd-%/go.mod
	cd $(TOOLS)/etcd-$* && go build -o $@ go.etcd.io/etcd/etcdutl/v3

.PHONY: etcd-versions
etcd-versions: $(BIN)/etcdutl $(ETCD_VERSION_BINS) ## Build etcdutl for bin/etcd and etcd + etcdutl 3.5.x and 3.6.x into bin/etcd-v3.5, bin/etcd-v3.6.

# The MinIO server, a real S3 server that enforces policies, for the
# credential broker's tests (internal/credbroker). AGPL: built from its own
# module ($(TOOLS)/minio) as a test tool and never linked into the driver.
$(BIN)/minio: $(TOOLS)/minio/go.mod $(TOOLS)/minio/tools.go
	cd $(TOOLS)/minio && go build -o $@ github.com/minio/minio

.PHONY: envtest-bins
envtest-bins: $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/kube-controller-manager etcd-versions ## Build kube-apiserver, etcd, kube-controller-manager and the etcd versions from source into bin/ (reused when present).

.PHONY: tools
tools: envtest-bins $(BIN)/minio $(CONTROLLER_GEN) ## Build every tool the build and tests use.

##@ Build and test

.PHONY: build
build: ## Build the manager binary and etcd-stage, the restore's staging step.
	go build -o $(BIN)/manager ./cmd/manager
	go build -o $(BIN)/etcd-stage ./cmd/etcd-stage

.PHONY: plugin
plugin: ## Build bin/ebdctl and the kubectl plugin bin/kubectl-etcd_backup (`kubectl etcd-backup` once on PATH).
	go build -o $(BIN)/ebdctl ./cmd/ebdctl
	go build -o $(BIN)/kubectl-etcd_backup ./cmd/kubectl-etcd_backup

.PHONY: fmt-check
fmt-check: ## Fail when any Go file is not gofmt-clean.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# test/alerts is a module of its own (it needs the Prometheus server's rule
# engine, kept out of the driver's dependencies).
ALERTS_MODULE := test/alerts

.PHONY: vet
vet: ## go vet the module and test/alerts.
	go vet ./...
	cd $(ALERTS_MODULE) && go vet ./...

.PHONY: bench
bench: build envtest-bins ## Measure the driver at scale (1,000 tenants backing up at once, 10,000 Backups cached, 20 restores at once; 3 shards over 3,000 tenants with a leader killed mid-round, and one replica over the same; 1,000 Plans at a fixed minute against H) and the sandbox stand-in's three-member start, and print the figures.
	go test ./test/bench -run '^$$' -bench 'Backups|Restores' -benchtime 1x -timeout 60m
	# The shards get an API server of their own: the tenants above would
	# land, unlabelled, in shard 0.
	go test ./test/bench -run '^$$' -bench Shards -benchtime 1x -timeout 60m
	# The same round with one unsharded replica, for comparison.
	go test ./test/bench -run '^$$' -bench OneReplica -benchtime 1x -timeout 60m
	# 1,000 Plans written "0 3 * * *" against "H 3 * * *".
	go test ./test/bench -run '^$$' -bench PlanSpread -benchtime 1x -timeout 60m
	go test ./internal/sandbox/operator -run '^$$' -bench ThreeMemberStart -benchtime 5x

# The restore's staging binary, which the sandbox's kubelet stand-in runs for
# the staging image's /etcd-stage. Skipped with a notice while the command
# does not exist (the sandbox then leaves staging Pods failing to start).
.PHONY: stage-bin
stage-bin: ## Build bin/etcd-stage (skipped with a notice when ./cmd/etcd-stage does not exist).
	@if [ -d cmd/etcd-stage ]; then \
		echo "go build -o $(BIN)/etcd-stage ./cmd/etcd-stage"; \
		go build -o $(BIN)/etcd-stage ./cmd/etcd-stage; \
	else \
		echo "stage-bin: ./cmd/etcd-stage does not exist yet; bin/etcd-stage not built (the sandbox cannot stage restores)"; \
	fi

.PHONY: test
test: envtest-bins $(BIN)/minio stage-bin ## Run every test, envtest suites included (and test/alerts, the chart's alerts on real metrics).
	go test $(GO_TEST_FLAGS) ./...
	cd $(ALERTS_MODULE) && go test $(GO_TEST_FLAGS) ./...

.PHONY: sandbox-bin
sandbox-bin: ## Build bin/sandbox.
	go build -o $(BIN)/sandbox ./cmd/sandbox

# BROKERED=1 runs the sandbox on a real MinIO server (bin/minio) and the
# examples with brokered per-tenant keys instead of the embedded S3 server
# and one shared Secret.
BROKERED ?=
SANDBOX_S3 := $(if $(filter-out 0,$(BROKERED)),minio,embedded)

.PHONY: sandbox
sandbox: envtest-bins stage-bin sandbox-bin $(if $(filter minio,$(SANDBOX_S3)),$(BIN)/minio) ## Run the sandbox until Ctrl-C; it prints a KUBECONFIG to use (BROKERED=1: on MinIO, brokered keys).
	$(BIN)/sandbox run --s3 $(SANDBOX_S3)

.PHONY: demo
demo: envtest-bins stage-bin sandbox-bin $(if $(filter minio,$(SANDBOX_S3)),$(BIN)/minio) ## Backup and in-place restore of real data on the sandbox, with a summary (BROKERED=1: on MinIO, brokered keys).
	BROKERED=$(filter-out 0,$(BROKERED)) bash hack/demo.sh

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'
