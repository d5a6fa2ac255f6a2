# capwin: a Cluster API provider for Linux control planes and Windows Server
# workers on vSphere and Azure. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

GO ?= go
TOOLS_MOD := $(CURDIR)/hack/tools/go.mod
# Tools run through `go tool`; the go command builds each once and keeps it in
# its build cache (outside this tree), so later runs start at once.
CONTROLLER_GEN := $(GO) tool -modfile=$(TOOLS_MOD) controller-gen
# The path of the kustomize binary, for a command run outside this tree.
KUSTOMIZE_BIN := $(GO) tool -modfile=$(TOOLS_MOD) -n kustomize
GOLANGCI_LINT := $(GO) tool -modfile=$(TOOLS_MOD) golangci-lint
CLUSTERCTL := $(GO) tool -modfile=$(TOOLS_MOD) clusterctl

# Every Go module of the repository whose code ships, the bundle's builder,
# the benchmark report's and the image's (the pinned tools excluded).
MODULES := . $(patsubst %/go.mod,%,$(wildcard node-components/go.mod)) hack/bundle hack/benchreport hack/image

# The manager's image: the name make image records in out/image and the
# image make release-manifests puts in both providers' Deployments, for
# example IMAGE=ghcr.io/me/capwin-manager:v0.1.0 for both.
IMAGE ?= capwin-manager:dev

# Extra flags for `go test`, for example TEST_ARGS='-run TestSmoke -v'.
TEST_ARGS ?=
# How long `make fuzz` fuzzes each target.
FUZZ_TIME ?= 2m

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code, CRDs, RBAC and webhook manifests (controller-gen)
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/infrastructure/... output:crd:artifacts:config=config/crd/infrastructure/bases
	$(CONTROLLER_GEN) crd paths=./api/bootstrap/... output:crd:artifacts:config=config/crd/bootstrap/bases
	$(CONTROLLER_GEN) webhook paths=./webhooks/manifests/infrastructure/... output:webhook:artifacts:config=config/webhook/infrastructure
	$(CONTROLLER_GEN) webhook paths=./webhooks/manifests/bootstrap/... output:webhook:artifacts:config=config/webhook/bootstrap
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./controllers/... output:rbac:artifacts:config=config/rbac/infrastructure
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./bootstrap/... output:rbac:artifacts:config=config/rbac/bootstrap

.PHONY: build
build: ## Build capwin-manager and capwin into bin/, and capwin-node.exe for Windows
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/...
	cd node-components && GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath -o ../bin/ ./cmd/...

.PHONY: bundle bundle-verify
# The Kubernetes version of the bundle's kubelet, kube-proxy and kubeadm
# (empty: the one hack/kubernetes pins, the flavors').
KUBERNETES_VERSION ?=

bundle: ## Build the Windows node bundle into out/bundle: zip, manifest, SBOM (KUBERNETES_VERSION=v1.36.3; about 15 min on 2 cores the first time, seconds after)
	cd hack/bundle && $(GO) run . bundle --root $(CURDIR) --out $(CURDIR)/out/bundle $(if $(KUBERNETES_VERSION),--kubernetes-version $(KUBERNETES_VERSION))

bundle-verify: bundle ## Check the bundle and rebuild every component in a fresh build cache: the hashes must be equal (about 15 min on 2 cores)
	cd hack/bundle && $(GO) run . verify --root $(CURDIR) --out $(CURDIR)/out/bundle $(if $(KUBERNETES_VERSION),--kubernetes-version $(KUBERNETES_VERSION))

.PHONY: image
image: ## Build the manager's image for linux/amd64 and linux/arm64 without Docker into out/image, an OCI image layout (IMAGE names it; docs/development.md says how to push it)
	cd hack/image && GO=$(GO) $(CURDIR)/hack/progress.sh "the manager's image (hack/image) into out/image" $(GO) run . --root $(CURDIR) --out $(CURDIR)/out/image --image $(IMAGE)

.PHONY: dev
DEV_ARGS ?=

# capwin is built, and the envtest control plane the first time, with a word
# on what is being built and the time it takes, before it runs.
dev: ## Run a Windows cluster on simulators and scale it 0 -> 3 -> 1; DEV_ARGS=--once exits after (capwin dev -h)
	@GO=$(GO) hack/download.sh . ./cmd/capwin
	@hack/progress.sh "capwin (cmd/capwin) into bin/" $(GO) build -o bin/capwin ./cmd/capwin
	@assets=$${KUBEBUILDER_ASSETS:-$$(GO=$(GO) hack/envtest-assets.sh)} && KUBEBUILDER_ASSETS="$$assets" bin/capwin dev $(DEV_ARGS)

RELEASE_DIR ?= out

.PHONY: release-manifests
# Each provider's components are built through an overlay that only sets
# the image (kustomize edit set image), written under out/ as kustomize
# takes neither an absolute path nor a base outside the overlay's tree.
release-manifests: ## Write infrastructure-components.yaml, bootstrap-components.yaml and metadata.yaml into out/, with the manager's image IMAGE
	mkdir -p $(RELEASE_DIR) out
	@set -e; kustomize=$$($(KUSTOMIZE_BIN)); overlay=$$(mktemp -d $(CURDIR)/out/.release-manifests-XXXXXX); \
	trap 'rm -rf "$$overlay"' EXIT; \
	for p in infrastructure bootstrap; do \
	  mkdir "$$overlay/$$p"; \
	  printf 'resources:\n  - ../../../config/%s\n' "$$p" >"$$overlay/$$p/kustomization.yaml"; \
	  (cd "$$overlay/$$p" && "$$kustomize" edit set image capwin-manager=$(IMAGE)); \
	  echo "kustomize build config/$$p, image $(IMAGE) > $(RELEASE_DIR)/$$p-components.yaml"; \
	  "$$kustomize" build "$$overlay/$$p" >$(RELEASE_DIR)/$$p-components.yaml; \
	done
	cp metadata.yaml $(RELEASE_DIR)/metadata.yaml

.PHONY: envtest-assets kubectl
envtest-assets: ## Build kube-apiserver and etcd for envtest, and kubectl, into ~/.cache/capwin and print the directory
	@hack/envtest-assets.sh

kubectl: ## Print the path of the pinned kubectl (built with the envtest control plane, the Kubernetes version of its API server)
	@dir=$$(hack/envtest-assets.sh) && echo "$$dir/kubectl"

##@ Testing

.PHONY: test
test: ## Run all tests (unit, envtest integration, the Windows build of node-components, the fuzz target on random inputs)
	@GO=$(GO) MAKE=$(MAKE) hack/test.sh $(TEST_ARGS)

.PHONY: images-check
images-check: ## Check the image definitions: the real packer validate and fmt (Packer v1.9.4, hack/tools/packer), what their scripts do and in which order (make test runs these too)
	cd hack/bundle && GO=$(GO) $(GO) test -count=1 -run 'Images|ImageScript|Packer|PauseImage' .

.PHONY: windows-check
# With make bundle's settings (hack/bundle/build.go), so that the packages
# hack/bundle's test compiled for capwin-node.exe are not compiled again.
WINDOWS_ENV := GOOS=windows GOARCH=amd64 GOAMD64=v1 CGO_ENABLED=0 GOEXPERIMENT= GOFIPS140=off

windows-check: ## Build and vet every package and command of node-components for windows/amd64
	cd node-components && $(WINDOWS_ENV) $(GO) build -trimpath ./... && $(WINDOWS_ENV) $(GO) vet -trimpath ./...

.PHONY: bench
bench: ## Run the benchmarks (payload sizes, render time, vCenter round trips and ARM requests per machine, Windows scale 0 -> 50 and 0 -> 500 on the simulation, the manager's memory with 1,000 machines, the node agent's join time and size) and write their report to out/bench/report.md
	rm -rf out/bench && mkdir -p out/bench/data
	CAPWIN_BENCH_OUT="$(CURDIR)/out/bench/data" KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" $(GO) test ./bootstrap/payload/ ./platform/vsphere/ ./platform/azure/ ./controllers/ ./cmd/capwin-manager/ ./test/e2e/ -run '^$$' -bench . -benchmem -timeout 60m | tee out/bench/bench.txt
	cd node-components && $(GO) test ./agent/ ./cmd/capwin-node/ -run '^$$' -bench . -benchmem | tee -a ../out/bench/bench.txt
	cd hack/benchreport && $(GO) run . -data ../../out/bench/data -bench ../../out/bench/bench.txt -out ../../out/bench

.PHONY: fuzz
fuzz: ## Run the coverage-guided fuzzer (FUZZ_TIME, default 2m each; its first run builds every dependency instrumented, about 5 min on 2 cores)
	$(GO) test ./webhooks/ -run '^$$' -fuzz FuzzDefaultThenValidate -fuzztime $(FUZZ_TIME)

##@ Verification

.PHONY: lint
lint: ## Run golangci-lint (node-components also as windows/amd64, for its Windows-only files)
	@for m in $(MODULES); do (set -x; cd $$m && $(GOLANGCI_LINT) run ./...) || exit 1; done
	cd node-components && GOOS=windows GOARCH=amd64 "$$($(GO) tool -modfile=$(TOOLS_MOD) -n golangci-lint)" run ./...

.PHONY: verify
verify: ## Check formatting, vet, lint, generated files and go.mod tidiness
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@for m in $(MODULES); do (set -x; cd $$m && $(GO) vet ./...) || exit 1; done
	$(MAKE) lint
	$(MAKE) generate
	@hack/verify-tidy.sh
	@git diff --exit-code -- . || { echo "generated files or go.mod are stale: run 'make generate' and 'go mod tidy' and commit the result"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- config api)" || { echo "untracked generated files:"; git status --porcelain -- config api; exit 1; }
