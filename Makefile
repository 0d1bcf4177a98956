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

# Cozystack's own CRDs (config/crd/upstream/cozystack, as pinned) that
# tests, the sandbox and the chart install instead of generating ours from
# api/: their Go types mirror exactly the fields those CRDs serve.
COZYSTACK_CRDS := backups.cozystack.io_backupclasses.yaml backups.cozystack.io_backupjobs.yaml backups.cozystack.io_backups.yaml backups.cozystack.io_plans.yaml backups.cozystack.io_restorejobs.yaml strategy.backups.cozystack.io_etcds.yaml

.PHONY: manifests
manifests: $(CONTROLLER_GEN) upstream-crds ## Regenerate CRDs (ours and the small test CRDs), RBAC and the module-served upstream CRDs.
	rm -rf config/crd/bases config/crd/external
	$(CONTROLLER_GEN) crd paths=./api/backups/... paths=./api/driver/... output:crd:artifacts:config=config/crd/bases
	cd config/crd/bases && rm -f $(COZYSTACK_CRDS)
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
chart-sync: ## Copy the generated CRDs, Cozystack's pinned CRDs of COZYSTACK_CRDS and the RBAC rules into the driver's chart.
	rm -rf $(DRIVER_CHART)/crds && mkdir -p $(DRIVER_CHART)/crds $(DRIVER_CHART)/files
	cp config/crd/bases/*.yaml $(DRIVER_CHART)/crds/
	cd config/crd/upstream/cozystack && cp $(COZYSTACK_CRDS) $(CURDIR)/$(DRIVER_CHART)/crds/
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
# proxy serves), for the staging proof in internal/tenantjobs/staging/step,
# which restores a staged snapshot with each of them as the operator does.
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

# actionlint, from a module of its own, lints .github/workflows
# (release-check).
$(BIN)/actionlint: $(TOOLS)/actionlint/go.mod
	cd $(TOOLS)/actionlint && go build -o $@ github.com/rhysd/actionlint/cmd/actionlint

.PHONY: envtest-bins
envtest-bins: $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/kube-controller-manager etcd-versions ## Build kube-apiserver, etcd, kube-controller-manager and the etcd versions from source into bin/ (reused when present).

.PHONY: tools
tools: envtest-bins $(BIN)/minio $(CONTROLLER_GEN) $(BIN)/actionlint ## Build every tool the build and tests use.

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
# engine, kept out of the driver's dependencies); so is hack/release, the
# plugin's release tool (its test checks a release it did not build).
ALERTS_MODULE  := test/alerts
RELEASE_MODULE := hack/release

.PHONY: vet
vet: ## go vet the module, test/alerts and hack/release.
	go vet ./...
	cd $(ALERTS_MODULE) && go vet ./...
	cd $(RELEASE_MODULE) && go vet ./...

.PHONY: bench
bench: build envtest-bins ## Measure the driver at scale (1,000 tenants backing up at once, 10,000 Backups cached, 20 restores at once; 3 shards over 3,000 tenants with a leader killed mid-round, and one replica over the same; 1,000 Plans at a fixed minute against H), inspection's requests per backup (with and without it) and InspectFile on snapshots of 50,000 and 200,000 objects, the driver's heap during a census of a hostile etcd, the sandbox stand-in's three-member start, and point-in-time restore's bytes and CPU per captured change, the capture of 100 tenants at 10 changes a second each (lag to S3 p50 and p99, bytes per change, CPU and memory per capture), a restore to a point 10,000 changes after the base (fetch and replay) and the driver's heap per followed tenant, and print the figures.
	go test ./test/bench -run '^$$' -bench 'Backups|Restores' -benchtime 1x -timeout 60m
	# The shards get an API server of their own: the tenants above would
	# land, unlabelled, in shard 0.
	go test ./test/bench -run '^$$' -bench Shards -benchtime 1x -timeout 60m
	# The same round with one unsharded replica, for comparison.
	go test ./test/bench -run '^$$' -bench OneReplica -benchtime 1x -timeout 60m
	# 1,000 Plans written "0 3 * * *" against "H 3 * * *".
	go test ./test/bench -run '^$$' -bench PlanSpread -benchtime 1x -timeout 60m
	go test ./internal/sandbox/operator -run '^$$' -bench ThreeMemberStart -benchtime 5x
	# What inspecting Backups costs the driver: requests per backup with
	# the inspection controller and without, on an API server of its own.
	go test ./test/bench -run '^$$' -bench Inspection -benchtime 1x -timeout 60m
	# What the inspection Job's reading costs: snapshots of 50,000 and
	# 200,000 objects.
	go test ./internal/tenantjobs/inspection/step -run '^$$' -bench InspectFile -benchtime 5x
	# The driver's heap during a census of a tenant's hostile etcd
	# (issue 37: distinct prefixes, distinct names, keys near 1.5 MiB),
	# against its 256 Mi limit.
	go test ./internal/liverevision -run '^$$' -bench HostileCensusHeap -benchtime 3x
	# Point-in-time restore's engine (docs/point-in-time.md): bytes stored
	# and CPU per change, the capture's cost per change against a real
	# etcd, and a restore to a point 10,000 changes after the base (the
	# chain fetched from S3 and verified, then replayed).
	go test ./internal/changelog -run '^$$' -bench SegmentBytesPerChange -benchtime 200000x
	go test ./internal/tenantjobs/capture/step -run '^$$' -bench 'Capture$$' -benchtime 10000x -timeout 30m
	go test ./internal/changereplay -run '^$$' -bench Replay10000 -benchtime 3x -timeout 30m
	# The capture at issue 39's load: 100 tenants, each its own etcd
	# (bin/etcd) and capture (bin/etcd-stage capture, made by build), 10
	# changes a second each for 75 s: lag from commit to durable in S3
	# (p50, p99), bytes per change, CPU and memory per capture.
	go test ./internal/tenantjobs/capture/step -run '^$$' -bench CaptureLoad -benchtime 1x -timeout 15m
	# What a followed tenant costs the driver's heap (its capture
	# Deployment and CaptureProgress in the cache).
	go test ./internal/tenantjobs/capture/keeper -run '^$$' -bench DriverMemory -benchtime 1x

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

# The image first, built twice and compared (image-reproducible leaves the
# second build): test/e2e/image runs the driver and the staging step from
# it (container mode), and fails, saying how to install podman, without it.
.PHONY: test
test: envtest-bins $(BIN)/minio stage-bin image-reproducible release-check ## Run every test, envtest suites included (and test/alerts, the chart's alerts on real metrics; test/e2e/image, the driver from its image; release-check).
	go test $(GO_TEST_FLAGS) ./...
	cd $(ALERTS_MODULE) && go test $(GO_TEST_FLAGS) ./...

##@ Image and release

# What a build says it is: the commit, the commit's date (never the clock, so
# that two builds of one commit are the same bytes) and a version: the tag
# vX.Y.Z on the commit, else the chart's appVersion with -dev.g<commit>
# (SemVer 2, and a valid image tag), with -dirty when the checkout differs
# from the commit (as Go's own vcs.modified says).
GIT_COMMIT  := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GIT_EPOCH   := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
GIT_DATE    := $(shell date -u -d @$(GIT_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
GIT_DIRTY   := $(shell test -z "$$(git status --porcelain 2>/dev/null)" || echo -dirty)
APP_VERSION := $(shell awk '$$1 == "appVersion:" { gsub(/"/, "", $$2); print $$2 }' $(DRIVER_CHART)/Chart.yaml)
VERSION     ?= $(or $(patsubst v%,%,$(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null)),$(APP_VERSION)-dev.g$(shell git rev-parse --short=12 HEAD 2>/dev/null))$(GIT_DIRTY)
VERSION_PKG := github.com/etcd-backup-driver/etcd-backup-driver/internal/version
LDFLAGS     := -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(GIT_COMMIT) -X $(VERSION_PKG).Date=$(GIT_DATE)

# The released image (the chart's default, the release workflow's target).
IMAGE_REPO ?= ghcr.io/etcd-backup-driver/etcd-backup-driver
IMAGE_NAME ?= $(IMAGE_REPO):$(VERSION)
# The repository has no LICENSE file: SPDX's NOASSERTION until its owners
# choose one (then set it here).
LICENSES   ?= NOASSERTION
IMAGE_PLATFORMS ?= linux/$(shell go env GOARCH)
IMAGE_CONTEXT   := $(BIN)/image/context
IMAGE_ARCHIVE    = $(BIN)/etcd-backup-driver-$(VERSION).oci.tar
# What `make image` built: IMAGE (its name), IMAGE_ID, IMAGE_STORAGE_DIGEST
# (the manifest digest in local storage, uncompressed layers: nothing can
# pull it; the archive's, IMAGE_ARCHIVE_DIGEST, is what a push of the
# archive keeps), the archive and its manifest's digest, and the storage
# below; the sandbox's container mode and its test read it.
IMAGE_ENV := $(BIN)/image/image.env

# buildah and podman keep this checkout's images in .containers (vfs: no
# overlay or fuse needed; runc: crun fails here; podman's default ulimits
# cannot be set here, hack/containers/containers.conf empties them).
CONTAINERS_DIR   := $(CURDIR)/.containers
CONTAINERS_STORE := --root $(CONTAINERS_DIR)/storage --runroot $(CONTAINERS_DIR)/run --storage-driver vfs
BUILDAH          := buildah $(CONTAINERS_STORE)
export CONTAINERS_CONF := $(CURDIR)/hack/containers/containers.conf

.PHONY: image-tools
image-tools: ## Fail, saying how to install them, unless buildah, podman, runc and jq are on PATH.
	@for t in buildah podman runc jq; do command -v $$t >/dev/null || { \
		echo "$$t is not installed: as root, apt-get install -y podman buildah runc jq (Debian/Ubuntu), or dnf install -y podman buildah runc jq" >&2; exit 1; }; done

.PHONY: image-context
image-context: ## Lay out the image's build context in bin/image/context: static manager and etcd-stage per platform (IMAGE_PLATFORMS), the CA bundle.
	rm -rf $(IMAGE_CONTEXT) && mkdir -p $(IMAGE_CONTEXT)
	for p in $(IMAGE_PLATFORMS); do \
		for c in manager etcd-stage; do \
			echo "go build $$p/$$c"; \
			CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_CONTEXT)/$$p/$$c ./cmd/$$c; \
		done; \
	done
	cd hack/tools/cabundle && go run . $(IMAGE_CONTEXT)/ca-certificates.crt

.PHONY: image
image: image-tools image-context ## Build the image (buildah, offline, reproducible) as $(IMAGE_NAME) and write it as an OCI archive to bin/etcd-backup-driver-$(VERSION).oci.tar.
	@# Files are replaced, never rewritten in place: bin/ may be hard links
	@# to another checkout's (a copy made with cp -al).
	rm -f $(BIN)/image/iid $(IMAGE_ENV)
	$(BUILDAH) bud --isolation chroot --timestamp $(GIT_EPOCH) --platform $(firstword $(IMAGE_PLATFORMS)) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(GIT_COMMIT) --build-arg CREATED=$(GIT_DATE) --build-arg LICENSES=$(LICENSES) \
		--iidfile $(BIN)/image/iid -f Dockerfile -t $(IMAGE_NAME) $(IMAGE_CONTEXT)
	rm -f $(IMAGE_ARCHIVE)
	$(BUILDAH) push --quiet $(IMAGE_NAME) oci-archive:$(IMAGE_ARCHIVE):$(IMAGE_NAME)
	{ echo "IMAGE=$(IMAGE_NAME)"; echo "IMAGE_ID=$$(cat $(BIN)/image/iid)"; \
	  echo "IMAGE_STORAGE_DIGEST=$$($(BUILDAH) inspect --type image --format '{{.FromImageDigest}}' $(IMAGE_NAME))"; \
	  echo "IMAGE_ARCHIVE=$(IMAGE_ARCHIVE)"; \
	  echo "IMAGE_ARCHIVE_DIGEST=$$(tar -xOf $(IMAGE_ARCHIVE) index.json | jq -r '.manifests[0].digest')"; \
	  echo "CONTAINERS_DIR=$(CONTAINERS_DIR)"; } > $(IMAGE_ENV).tmp && mv $(IMAGE_ENV).tmp $(IMAGE_ENV)
	@cat $(IMAGE_ENV)

# The plugin's release (hack/release): kubectl-etcd_backup and ebdctl for
# linux and darwin on amd64 and arm64, built as image-context builds the
# image's binaries (static, -trimpath, $(LDFLAGS)), each in a reproducible
# tar.gz with README.md and docs/plugin.md, checksums.txt and the krew
# manifest etcd-backup.yaml, into dist/. The binaries are kept in
# bin/release/build, so go build relinks only what changed. Without
# SNAPSHOT=1 only a clean checkout of the tag v$(VERSION) is released.
DIST          := $(CURDIR)/dist
RELEASE_BUILD := $(BIN)/release/build
RELEASE_FLAGS  = -root $(CURDIR) -out $(DIST) -build $(RELEASE_BUILD) \
	-version $(VERSION) -commit $(GIT_COMMIT) -date $(GIT_DATE) -ldflags '$(LDFLAGS)'
SNAPSHOT ?=

.PHONY: plugin-release
plugin-release: ## Build the plugin's release into dist/: archives for linux and darwin on amd64 and arm64, checksums.txt and the krew manifest (the tag v$(VERSION), clean; SNAPSHOT=1: any checkout).
	cd $(RELEASE_MODULE) && go run . $(if $(filter-out 0,$(SNAPSHOT)),-snapshot) $(RELEASE_FLAGS)

# What the release (.github/workflows/release.yml) cannot run here is checked
# here: the workflows by actionlint, and the plugin's release by a snapshot
# run of plugin-release and hack/release's tests on what it wrote (every
# archive holds its platform's binary, stamped; the host's says its version;
# checksums and the krew manifest match; a second run, linked in a folder of
# its own, gives the same bytes). Nothing is published; cosign and syft run
# in the release workflow only.
.PHONY: release-check
release-check: $(BIN)/actionlint ## Lint the workflows, build the plugin's release as a snapshot into dist/, and check it (hack/release's tests).
	$(BIN)/actionlint
	cd $(RELEASE_MODULE) && go run . -snapshot $(RELEASE_FLAGS)
	cd $(RELEASE_MODULE) && RELEASE_DIST=$(DIST) RELEASE_REBUILD=$(BIN)/release/rebuild \
		RELEASE_VERSION=$(VERSION) RELEASE_COMMIT=$(GIT_COMMIT) RELEASE_DATE=$(GIT_DATE) RELEASE_LDFLAGS='$(LDFLAGS)' \
		go test -count=1 ./...

# The packaged chart: version and appVersion $(VERSION), the image pinned
# by IMAGE_DIGEST when given (the release passes the digest it pushed).
CHART_DIST   := $(BIN)/charts
IMAGE_DIGEST ?=

.PHONY: chart-package
chart-package: ## Package the driver's chart as bin/charts/etcd-backup-driver-$(VERSION).tgz (Helm SDK; IMAGE_DIGEST=sha256:... pins the image), for `helm push ... oci://ghcr.io/etcd-backup-driver/charts`.
	go run ./hack/chartpackage --version $(VERSION) $(if $(IMAGE_DIGEST),--image-digest $(IMAGE_DIGEST)) --out $(CHART_DIST) $(DRIVER_CHART)

.PHONY: image-reproducible
image-reproducible: ## Build the image twice from a fresh context and fail unless both have the same digest.
	$(MAKE) --no-print-directory image
	rm -f $(BIN)/image/first.env && cp $(IMAGE_ENV) $(BIN)/image/first.env
	$(BUILDAH) rmi --force $(IMAGE_NAME) >/dev/null
	$(MAKE) --no-print-directory image
	@for k in IMAGE_ID IMAGE_STORAGE_DIGEST IMAGE_ARCHIVE_DIGEST; do \
		first=$$(grep "^$$k=" $(BIN)/image/first.env | cut -d= -f2); second=$$(grep "^$$k=" $(IMAGE_ENV) | cut -d= -f2); \
		if [ -z "$$first" ] || [ "$$first" != "$$second" ]; then echo "image-reproducible: two builds of $(GIT_COMMIT) differ in $$k: '$$first', '$$second'" >&2; exit 1; fi; \
		echo "image-reproducible: $$k of both builds: $$first"; \
	done

.PHONY: sandbox-bin
sandbox-bin: ## Build bin/sandbox.
	go build -o $(BIN)/sandbox ./cmd/sandbox

# BROKERED=1 runs the sandbox on a real MinIO server (bin/minio) and the
# examples with brokered per-tenant keys instead of the embedded S3 server
# and one shared Secret.
BROKERED ?=
SANDBOX_S3 := $(if $(filter-out 0,$(BROKERED)),minio,embedded)

# IMAGE=1 is container mode: the sandbox runs the driver, and the restore's
# staging Pods, from the image `make image` builds, with podman (as the
# chart's Deployment and the staging Job run them) instead of in process.
IMAGE ?=
SANDBOX_IMAGE := $(filter-out 0,$(IMAGE))

.PHONY: sandbox
sandbox: envtest-bins stage-bin sandbox-bin $(if $(filter minio,$(SANDBOX_S3)),$(BIN)/minio) $(if $(SANDBOX_IMAGE),image) ## Run the sandbox until Ctrl-C; it prints a KUBECONFIG to use (BROKERED=1: on MinIO, brokered keys; IMAGE=1: the driver and staging from the image).
	$(BIN)/sandbox run --s3 $(SANDBOX_S3) $(if $(SANDBOX_IMAGE),--image)

# The demo shows brokered keys, so it runs on MinIO unless BROKERED=0 (the
# embedded S3 server and one shared Secret).
DEMO_BROKERED := $(if $(filter 0,$(BROKERED)),,1)

.PHONY: demo
demo: envtest-bins stage-bin sandbox-bin plugin $(if $(DEMO_BROKERED),$(BIN)/minio) $(if $(SANDBOX_IMAGE),image) ## Backup, manifest, dry run, in-place restore, a pruning Plan, a content-drop hold and a restore to a point on the sandbox (Cozystack's CRDs, https S3), with a summary (on MinIO with brokered keys; BROKERED=0: the embedded S3 server; IMAGE=1: the driver and staging from the image).
	BROKERED=$(DEMO_BROKERED) IMAGE=$(SANDBOX_IMAGE) bash hack/demo.sh

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'
