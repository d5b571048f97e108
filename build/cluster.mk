# The end-to-end suite's production-shaped lane: real nodes in network namespaces of their own,
# kube-proxy and CoreDNS as pods, Crossplane installed by its Helm chart, the function and the
# provider run by Crossplane's Default runtime (docs/e2e.md). Its tools: Helm, to install
# Crossplane from the chart in the pinned Crossplane module; CoreDNS, the cluster DNS;
# kube-proxy, from the same Kubernetes module as the control plane; and what its application
# images hold: the gomemcache application and memjs (the Python applications' libraries are
# build/node.mk's Debian packages). Included after build/e2e.mk and build/node.mk.
#
#   make e2e             runs this lane after the other scenarios (E2E_CLUSTER=off skips it)
#   make e2e-cluster     only this lane
#   make cluster-tools   build bin/helm, bin/coredns, bin/kube-proxy and the applications

HELM_VERSION := v3.19.0
# The memjs application's Node.js and memjs (below).
NODEJS_VERSION := v20.20.2
MEMJS_APP := $(BIN)/memjs-app/node_modules/memjs/package.json
CLUSTER_TOOLS := $(BIN)/helm $(BIN)/coredns $(BIN)/kube-proxy $(BIN)/memcached-app nodejs-version $(MEMJS_APP)

$(BIN)/helm: tools/helm/go.mod tools/helm/go.sum | $(BIN)
	$(GO) -C tools/helm build -trimpath -o $@ \
		-ldflags "$(E2E_LDFLAGS) -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION)" \
		helm.sh/helm/v3/cmd/helm

# Static, for an image with nothing else in it; tools/coredns/main.go picks the plugins.
$(BIN)/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go | $(BIN)
	CGO_ENABLED=0 $(GO) -C tools/coredns build -trimpath -ldflags "$(E2E_LDFLAGS)" -o $@ .

# Static, for its image (with Debian's iptables beside it); stamped like the control plane.
$(BIN)/kube-proxy: tools/kubernetes/go.mod tools/kubernetes/go.sum | $(BIN)
	CGO_ENABLED=0 $(GO) -C tools/kubernetes build -trimpath -o $@ \
		-ldflags "$(E2E_LDFLAGS) \
			-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
			-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35" \
		k8s.io/kubernetes/cmd/kube-proxy

# An application's image: the connection Secret and gomemcache (test/e2e/cmd/memcached-app);
# relinked like pause.
.PHONY: $(BIN)/memcached-app
$(BIN)/memcached-app: | $(BIN)
	$(GO) build -trimpath -ldflags "$(E2E_LDFLAGS)" -o $@ ./test/e2e/cmd/memcached-app

# The memjs application (test/e2e/apps/memjs): memjs at the version its package-lock.json pins
# (npm ci checks the package's integrity against it), installed into bin/memjs-app, from which
# the suite builds the application's image with the machine's Node.js. That Node.js is
# NodeSource's build the machine comes with (/usr/bin/node, Debian package nodejs): Debian's own
# nodejs 18 would replace it, so the lane checks its version instead of installing one.
$(MEMJS_APP): test/e2e/apps/memjs/package.json test/e2e/apps/memjs/package-lock.json | $(BIN)
	rm -rf $(BIN)/memjs-app && mkdir -p $(BIN)/memjs-app
	cp $^ $(BIN)/memjs-app/
	cd $(BIN)/memjs-app && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

.PHONY: nodejs-version
nodejs-version:
	@have=$$(node --version 2>/dev/null || echo none); \
	if [ "$$have" != "$(NODEJS_VERSION)" ]; then \
		echo "the production-shaped lane's memjs application runs on the machine's Node.js $(NODEJS_VERSION) (/usr/bin/node), found: $$have;"; \
		echo "move NODEJS_VERSION in build/cluster.mk (and docs/clients.md's memjs row) to the machine's, or skip the lane with E2E_CLUSTER=off"; \
		exit 1; \
	fi

## cluster-tools: build the production-shaped lane's Helm, CoreDNS and kube-proxy.
.PHONY: cluster-tools
cluster-tools: $(CLUSTER_TOOLS)

# Crossplane's chart and webhook configurations, from the same module as the core binary: the
# chart is what `helm install` installs, the webhook configurations go into Crossplane's image.
$(BIN)/crossplane-chart/.copied: tools/crossplane/go.mod tools/crossplane/go.sum | $(BIN)
	@dir=$$($(call module_dir,crossplane,github.com/crossplane/crossplane/v2)) && test -n "$$dir" && \
	rm -rf $(BIN)/crossplane-chart $(BIN)/crossplane-webhooks && \
	cp -r "$$dir"/cluster/charts/crossplane $(BIN)/crossplane-chart && \
	cp -r "$$dir"/cluster/webhookconfigurations $(BIN)/crossplane-webhooks && \
	chmod -R u+w $(BIN)/crossplane-chart $(BIN)/crossplane-webhooks && touch $@

# Off with the node lane: both need root and the same Debian packages.
E2E_CLUSTER ?= $(E2E_NODE)
ifeq ($(filter $(E2E_CLUSTER),on off),)
$(error E2E_CLUSTER must be on or off, not "$(E2E_CLUSTER)")
endif
# The lane's own output, beside the other scenarios': the same make run holds both.
E2E_CLUSTER_OUTPUT := $(OUTPUT_DIR)/e2e-cluster
# The lane runs its own scenarios and the provider's (which the other run then skips: they
# need workload clusters, reached here by the provider as Crossplane runs it). They mostly
# wait on watches, so more run at once than there are cores. All sixteen at once was faster
# warm but, cold, slowed a scenario past its 5 s bound (docs/performance.md).
E2E_CLUSTER_RUN ?= ^(TestCluster|TestProvider|TestUpgrade)
E2E_CLUSTER_PARALLEL ?= 6
E2E_CLUSTER_TIMEOUT ?= 20m

# TestUpgradeKeepsPods upgrades the function from the package of this commit: the last whose
# pod templates this version keeps. Move it forward deliberately, to the commit of a
# CHANGELOG.md section that says "this version restarts every Memcached" (docs/operations.md).
E2E_UPGRADE_FROM := 1a6b5ff9dd5ff9d4f25e518015eaf2ca5b0f1a19
E2E_UPGRADE_DIR := $(OUTPUT_DIR)/upgrade-from-$(E2E_UPGRADE_FROM)
E2E_UPGRADE_XPKG := $(E2E_UPGRADE_DIR)/_output/function-memcached-$(E2E_ARCH).xpkg

# That commit's package, built by its own Makefile from its own tree (git archive) and go.mod,
# once per pin. Its bin/ gets this checkout's Crossplane CLI, which only packages (the same
# pin since then; touched so that make does not rebuild it).
$(E2E_UPGRADE_XPKG): | $(BIN)/crossplane
	rm -rf $(E2E_UPGRADE_DIR) && mkdir -p $(E2E_UPGRADE_DIR)/bin
	git archive $(E2E_UPGRADE_FROM) | tar -x -C $(E2E_UPGRADE_DIR)
	cp $(BIN)/crossplane $(E2E_UPGRADE_DIR)/bin/ && touch $(E2E_UPGRADE_DIR)/bin/crossplane
	$(MAKE) --no-print-directory -C $(E2E_UPGRADE_DIR) xpkg XPKG_ARCHES=$(E2E_ARCH) \
		SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct $(E2E_UPGRADE_FROM))

ifeq ($(E2E_CLUSTER),on)
e2e-prerequisites: $(BIN)/crossplane-chart/.copied $(CLUSTER_TOOLS) $(E2E_UPGRADE_XPKG)
endif

## e2e-cluster: the production-shaped lane alone (run times: docs/performance.md).
.PHONY: e2e-cluster
e2e-cluster: E2E_OUTPUT := $(E2E_CLUSTER_OUTPUT)
e2e-cluster: E2E_NODE_DIR := cluster
e2e-cluster: $(E2E_TOOLS) $(BIN)/crossplane-crds/.copied $(BIN)/crossplane-chart/.copied node-packages $(NODE_TOOLS) \
		$(CLUSTER_TOOLS) $(E2E_XPKG) $(E2E_PROVIDER_XPKG) $(E2E_UPGRADE_XPKG)
	@mkdir -p $(E2E_OUTPUT)
	@rc=0; start=$$(date +%s); \
	E2E_LANE=cluster E2E_BIN=$(BIN) E2E_XPKG=$(E2E_XPKG) E2E_PROVIDER_XPKG=$(E2E_PROVIDER_XPKG) E2E_OUTPUT=$(E2E_OUTPUT) \
		E2E_UPGRADE_XPKG=$(E2E_UPGRADE_XPKG) E2E_CROSSPLANE_ARGS='$(E2E_CROSSPLANE_ARGS)' \
		$(GO) test -trimpath -tags e2e -count=1 -timeout $(E2E_CLUSTER_TIMEOUT) -parallel $(E2E_CLUSTER_PARALLEL) -v -run '$(E2E_CLUSTER_RUN)' ./test/e2e/ \
		| tee $(E2E_OUTPUT)/go-test.log || rc=$$?; \
	$(e2e_kill_leftovers); \
	$(e2e_node_down); \
	echo "e2e: the production-shaped lane took $$(( $$(date +%s) - start ))s; logs in $(E2E_OUTPUT)/logs"; \
	$(call e2e_failures,the production-shaped lane,$(E2E_OUTPUT)/go-test.log); \
	exit $$rc
