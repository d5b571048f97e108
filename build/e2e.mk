# End-to-end suite: a real kube-apiserver, etcd, controller-manager, scheduler, kwok and
# Crossplane core run as local processes on 127.0.0.1, with the real xpkg installed from a
# local registry and our function binary acting as its runtime. See docs/e2e.md.
#
#   make e2e            build what is missing, run every scenario, stop every process
#   make e2e-scale      only the scale scenario: 200 claims at once (E2E_SCALE_CLAIMS=n)
#   make e2e-provider-load  only the provider's load scenario: 500 Instances over two
#                           workload clusters (E2E_PROVIDER_INSTANCES=n)
#   make e2e-tools      only build the pinned control-plane binaries into bin/
#   make e2e E2E_RUN=TestResize   run some scenarios only (go test -run)
#
# Each binary depends on its tool module's go.mod and go.sum only, so it is built once and
# rebuilt only when its pin changes.

K8S_VERSION := v1.35.4
CROSSPLANE_CORE_VERSION := v2.4.0
E2E_OUTPUT ?= $(CURDIR)/_output/e2e
E2E_RUN ?= .
E2E_TIMEOUT ?= 20m
# How many parallel scenarios run at once (go test -parallel; its default is the number of
# cores). Most of a scenario is waiting on watches, so more run at once than there are cores
# (docs/performance.md, the CI rows).
E2E_PARALLEL ?= 6
# E2E_SCALE=1 adds the scale scenario (TestScale, minutes) to whatever E2E_RUN selects.
E2E_SCALE ?=
E2E_SCALE_CLAIMS ?= 200
# E2E_AUDIT=1 makes the API server write an audit log (logs/audit.log), from which the scale
# scenario reports who sent which requests; it costs the API server some CPU.
E2E_AUDIT ?=
# E2E_CROSSPLANE_ARGS adds flags to `crossplane core start`, e.g. "--max-reconcile-rate=10"
# or "--poll-interval=10m" (docs/performance.md says what they did at scale).
E2E_CROSSPLANE_ARGS ?=
# E2E_CONTROLLER_MANAGER_ARGS adds flags to the control plane's kube-controller-manager, e.g.
# "--kube-api-qps=100 --kube-api-burst=200" (its client's default, 20 requests a second per
# controller, paces its Deployment, ReplicaSet and garbage collector controllers at scale).
E2E_CONTROLLER_MANAGER_ARGS ?=
# E2E_SCALE_KIND=namespaced makes the scale scenario create v2 namespaced XRs (no claims),
# composed with the example Composition's Input, instead of claims.
E2E_SCALE_KIND ?= claim
# E2E_SCALE_REST=10m makes it wait that long once all are Available and report the cost at rest.
E2E_SCALE_REST ?=
# E2E_SCALE_PODS=5000 creates that many unrelated pods first; E2E_SCALE_DIAGNOSTICS=off composes
# the claims with the Input's diagnostics.pods false (what caching every pod costs Crossplane).
E2E_SCALE_PODS ?=
E2E_SCALE_DIAGNOSTICS ?= on
# E2E_PROVIDER_LOAD=1 adds the provider's load scenario (TestProviderLoad, minutes).
E2E_PROVIDER_LOAD ?=
E2E_PROVIDER_INSTANCES ?= 500
E2E_LDFLAGS := -s -w

K8S_BINS := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(BIN)/kubectl
E2E_TOOLS := $(K8S_BINS) $(BIN)/etcd $(BIN)/kwok $(BIN)/crossplane-core

# One go build for the four Kubernetes binaries: they share most packages, and the version
# stamped at link time is what `kubectl version` and Crossplane's discovery read.
$(K8S_BINS) &: tools/kubernetes/go.mod tools/kubernetes/go.sum | $(BIN)
	@echo "building Kubernetes $(K8S_VERSION) binaries (first time only; how long: docs/performance.md)"
	$(GO) -C tools/kubernetes build -trimpath -o $(BIN)/ \
		-ldflags "$(E2E_LDFLAGS) \
			-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
			-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35 \
			-X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION) \
			-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=35" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
	@touch $(K8S_BINS)

$(BIN)/etcd: tools/etcd/go.mod tools/etcd/go.sum | $(BIN)
	$(GO) -C tools/etcd build -trimpath -ldflags "$(E2E_LDFLAGS)" -o $@ go.etcd.io/etcd/server/v3

$(BIN)/kwok: tools/kwok/go.mod tools/kwok/go.sum | $(BIN)
	$(GO) -C tools/kwok build -trimpath -ldflags "$(E2E_LDFLAGS)" -o $@ sigs.k8s.io/kwok/cmd/kwok

# Crossplane core, not the CLI: `crossplane core init` and `crossplane core start`. Static,
# as the official image's: the production-shaped lane runs it in an image with nothing else.
$(BIN)/crossplane-core: tools/crossplane/go.mod tools/crossplane/go.sum | $(BIN)
	CGO_ENABLED=0 $(GO) -C tools/crossplane build -trimpath -o $@ \
		-ldflags "$(E2E_LDFLAGS) -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_CORE_VERSION)" \
		github.com/crossplane/crossplane/v2/cmd/crossplane

## e2e-tools: build the pinned control-plane binaries (build times: docs/performance.md).
.PHONY: e2e-tools
e2e-tools: $(E2E_TOOLS)

# kwok's Stage objects, from the pinned module: nodes become Ready and keep their leases,
# pods become Ready at once and go away when deleted.
KWOK_STAGES := node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
$(BIN)/kwok-stages.yaml: tools/kwok/go.mod tools/kwok/go.sum | $(BIN)
	@dir=$$($(call module_dir,kwok,sigs.k8s.io/kwok)) && test -n "$$dir" && \
	for f in $(KWOK_STAGES); do cat "$$dir/kustomize/stage/$$f" && echo '---' || exit 1; done > $@.tmp && mv $@.tmp $@

# Crossplane's CRDs, from the same module as the core binary.
$(BIN)/crossplane-crds/.copied: tools/crossplane/go.mod tools/crossplane/go.sum | $(BIN)
	@dir=$$($(call module_dir,crossplane,github.com/crossplane/crossplane/v2)) && test -n "$$dir" && \
	rm -rf $(BIN)/crossplane-crds && mkdir -p $(BIN)/crossplane-crds && \
	cp "$$dir"/cluster/crds/*.yaml $(BIN)/crossplane-crds/ && chmod -R u+w $(BIN)/crossplane-crds && touch $@

E2E_ARCH := $(shell $(GO) env GOARCH)
OUTPUT_DIR ?= $(CURDIR)/_output
E2E_XPKG := $(OUTPUT_DIR)/function-memcached-$(E2E_ARCH).xpkg
E2E_PROVIDER_XPKG := $(OUTPUT_DIR)/provider-memcached-$(E2E_ARCH).xpkg

# Kills, by the PIDs the suite recorded ("<pid> <name> <binary>" a line), whatever a crashed
# or killed suite left running (the suite stops its processes itself; this is the net under
# it). A PID is killed only while its command line still holds the component's binary, so a
# reused PID is left alone.
define e2e_kill_leftovers
	if [ -s $(E2E_OUTPUT)/pids ]; then \
		while read -r pid name binary; do \
			if tr '\0' ' ' < /proc/$$pid/cmdline 2>/dev/null | grep -qF -- "$$binary"; then \
				echo "e2e: killing leftover $$name (pid $$pid)"; kill -KILL -- -$$pid 2>/dev/null || kill -KILL $$pid 2>/dev/null || true; \
			fi; \
		done < $(E2E_OUTPUT)/pids; \
	fi
endef

# Names, last, the scenarios a suite's run failed, or why the suite did not start (from its go
# test output, tee'd to $(2)), so that the end of a long log, which is what CI shows, says what
# failed: a failed run ends with each component's last lines, and the kwok suite's with the
# whole lane after it.
define e2e_failures
	if grep -qE '$(e2e_failure_lines)' $(2) 2>/dev/null; then \
		echo "e2e: $(1) failed (the full output: $(2)):"; grep -E '$(e2e_failure_lines)' $(2); \
	fi
endef
e2e_failure_lines := ^ *--- FAIL|^e2e: the suite did not start

## e2e-prerequisites: every tool make e2e needs (its lanes' too, as E2E_NODE and E2E_CLUSTER
# say). make e2e builds them all before its first suite, so that `make -j2 test e2e` (.ci/run)
# builds them beside make test: one build's downloads and single-threaded links overlap
# another's compiles on a new machine.
.PHONY: e2e-prerequisites
e2e-prerequisites: $(E2E_TOOLS) $(BIN)/kwok-stages.yaml $(BIN)/crossplane-crds/.copied e2e-node

## e2e: the end-to-end suite on a real API server and Crossplane (run times: docs/performance.md).
# The xpkgs are the host's packages of `make xpkg` and `make provider-xpkg`, built by the same
# rules: Crossplane installs both, and the suite runs the binaries their runtime images hold.
.PHONY: e2e
e2e: e2e-prerequisites $(E2E_XPKG) $(E2E_PROVIDER_XPKG)
	@mkdir -p $(E2E_OUTPUT)
	@rc=0; start=$$(date +%s); \
	E2E_BIN=$(BIN) E2E_XPKG=$(E2E_XPKG) E2E_PROVIDER_XPKG=$(E2E_PROVIDER_XPKG) E2E_OUTPUT=$(E2E_OUTPUT) \
		E2E_SCALE=$(E2E_SCALE) E2E_SCALE_CLAIMS=$(E2E_SCALE_CLAIMS) E2E_AUDIT=$(E2E_AUDIT) \
		E2E_CROSSPLANE_ARGS='$(E2E_CROSSPLANE_ARGS)' E2E_CONTROLLER_MANAGER_ARGS='$(E2E_CONTROLLER_MANAGER_ARGS)' E2E_SCALE_KIND=$(E2E_SCALE_KIND) E2E_SCALE_REST=$(E2E_SCALE_REST) \
		E2E_SCALE_PODS=$(E2E_SCALE_PODS) E2E_SCALE_DIAGNOSTICS=$(E2E_SCALE_DIAGNOSTICS) \
		E2E_PROVIDER_LOAD=$(E2E_PROVIDER_LOAD) E2E_PROVIDER_INSTANCES=$(E2E_PROVIDER_INSTANCES) \
		E2E_WORKLOADS_IN_CLUSTER=$(if $(filter on,$(E2E_CLUSTER)),1) \
		$(GO) test -trimpath -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) -v -run '$(E2E_RUN)' ./test/e2e/ \
		| tee $(E2E_OUTPUT)/go-test.log || rc=$$?; \
	$(e2e_kill_leftovers); \
	$(e2e_node_down); \
	echo "e2e: suite took $$(( $$(date +%s) - start ))s; logs in $(E2E_OUTPUT)/logs"; \
	if [ "$(E2E_CLUSTER)" = on ]; then $(MAKE) --no-print-directory e2e-cluster || rc=1; fi; \
	$(call e2e_failures,the suite,$(E2E_OUTPUT)/go-test.log); \
	exit $$rc

# E2E_SCALE_TIMEOUT bounds the whole run: creating, resting and deleting 3,000 claims takes most
# of an hour on two cores.
E2E_SCALE_TIMEOUT ?= 90m

## e2e-scale: the scale scenario alone: 200 claims at once, wall time and function CPU per call
# (run times: docs/performance.md). It is not part of `make e2e`, which it would more than double.
# Crossplane logs at info level here, as a platform runs it (the other scenarios run it with
# --debug, for their failure reports); each claim's times go to _output/e2e/scale/ for
# `make scale-plot`.
.PHONY: e2e-scale
e2e-scale:
	@E2E_CROSSPLANE_DEBUG=false $(MAKE) --no-print-directory e2e E2E_SCALE=1 E2E_RUN=TestScale E2E_TIMEOUT=$(E2E_SCALE_TIMEOUT) E2E_CLUSTER=off

## e2e-provider-load: the provider's load scenario alone: 500 Instances over two workload
# clusters; the provider's steady-state CPU, its requests per minute to each cluster when
# nothing changes, and how soon a Deployment deleted by hand is restored (docs/performance.md).
# Not part of `make e2e`.
.PHONY: e2e-provider-load
e2e-provider-load:
	@$(MAKE) --no-print-directory e2e E2E_PROVIDER_LOAD=1 E2E_RUN=TestProviderLoad E2E_TIMEOUT=40m E2E_CLUSTER=off
