# The end-to-end suite's node lane: one real node (kubelet, containerd, runc, CNI bridge) beside
# kwok's fake ones, running the rendered pods for real. Included from the top-level Makefile
# after build/e2e.mk, which defines K8S_VERSION, E2E_LDFLAGS and the e2e target. See
# docs/e2e.md.
#
#   make e2e                   runs the node lane too (root, cgroups, the Debian packages below)
#   make e2e E2E_NODE=off      skips it, saying so: the TestNode… scenarios are skipped and the
#                              function runs as a host process
#   make node-packages         install (as root) the pinned Debian packages the lane needs
#   make node-tools            build the kubelet, the pause binary, memcached (build/memcached.mk),
#                              the memcached exporter, the network policy scenario's client and
#                              kube-router
#
# E2E_NODE is exported to the suite, which fails loudly when the lane is on and the machine
# cannot run it (not root, no cgroup memory controller, a package missing).

E2E_NODE ?= on
export E2E_NODE

ifeq ($(filter $(E2E_NODE),on off),)
$(error E2E_NODE must be on or off, not "$(E2E_NODE)")
endif

# Debian bookworm packages, pinned. containerd, runc and the CNI plugins run the pods; iptables
# is what the kubelet programs its canary chains with; conntrack is what it flushes stale UDP
# flows with; iproute2 sets up the node's bridge; ipset (with iptables) is what kube-router's
# network policy firewall programs; python3-pymemcache (and six, which it imports) and
# python3-pylibmc (on libmemcached11; its SASL PLAIN plugin is memcached-build-deps'
# libsasl2-modules) are the Python clients the production-shaped lane's Python application
# image is built with.
NODE_PACKAGES := \
	containerd=1.6.20~ds1-1+deb12u3 \
	runc=1.1.5+ds1-1+deb12u1 \
	containernetworking-plugins=1.1.1+ds1-3+b5 \
	iptables=1.8.9-2 \
	ipset=7.17-1 \
	conntrack=1:1.4.7-1+b2 \
	iproute2=6.1.0-3 \
	python3-pymemcache=3.5.2-1 \
	python3-six=1.16.0-4 \
	python3-pylibmc=1.6.3-1+b1 \
	libmemcached11=1.1.4-1 \
	libhashkit2=1.1.4-1

MEMCACHED_EXPORTER_VERSION := 0.14.4
KUBE_ROUTER_VERSION := v2.1.0
# The memcached image is built from bin/memcached (with the libraries it links and Cyrus SASL's
# PLAIN plugin, from memcached-build-deps' libsasl2-modules), as the official image is
# configured, not from Debian's package, which lacks SASL from a password file.
NODE_TOOLS := $(BIN)/kubelet $(BIN)/pause $(BIN)/memcached $(BIN)/memcached_exporter $(BIN)/reach $(BIN)/kube-router

## node-packages: install the node lane's Debian packages at their pinned versions, as root;
# a no-op when every one is installed at that version. Services are not started: the suite runs
# containerd itself.
.PHONY: node-packages
node-packages:
	@missing=; \
	for p in $(NODE_PACKAGES); do \
		have=$$(dpkg-query -W -f='$${Version}' "$${p%%=*}" 2>/dev/null || true); \
		[ "$$have" = "$${p#*=}" ] || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "node-packages: all installed at their pinned versions"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "node-packages: the node lane needs$$missing, and installing them needs root."; \
		echo "Run 'sudo make node-packages', or skip the lane with E2E_NODE=off."; exit 1; \
	fi; \
	echo "node-packages: installing$$missing"; \
	$(call apt_get,update -qq) && $(call apt_get,install -y -qq --no-install-recommends $$missing)

# The kubelet comes from the same pinned Kubernetes module as the control plane, with the same
# version stamp. It is its own go build (its own link; the compiled packages are shared with
# the control plane's through the Go build cache).
$(BIN)/kubelet: tools/kubernetes/go.mod tools/kubernetes/go.sum | $(BIN)
	@echo "building kubelet $(K8S_VERSION) (first time only; how long: docs/performance.md)"
	$(GO) -C tools/kubernetes build -trimpath -o $@ \
		-ldflags "$(E2E_LDFLAGS) \
			-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
			-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35 \
			-X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION) \
			-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=35" \
		k8s.io/kubernetes/cmd/kubelet

# The exporter sidecar's binary, static, for an image with nothing else in it.
$(BIN)/memcached_exporter: tools/memcached-exporter/go.mod tools/memcached-exporter/go.sum | $(BIN)
	CGO_ENABLED=0 $(GO) -C tools/memcached-exporter build -trimpath -o $@ \
		-ldflags "$(E2E_LDFLAGS) -X github.com/prometheus/common/version.Version=$(MEMCACHED_EXPORTER_VERSION)" \
		github.com/prometheus/memcached_exporter/cmd/memcached_exporter

# The pod sandbox's binary; always relinked from the Go cache, like the function itself.
.PHONY: $(BIN)/pause
$(BIN)/pause: | $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(E2E_LDFLAGS)" -o $@ ./test/e2e/cmd/pause

# The network policy scenario's client, for an image with nothing else in it; relinked like
# pause.
.PHONY: $(BIN)/reach
$(BIN)/reach: | $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(E2E_LDFLAGS)" -o $@ ./test/e2e/cmd/reach

# kube-router, of which the network policy scenario runs only the firewall (iptables and ipset)
# on the real node, to enforce the NetworkPolicies the function renders. A test tool on
# loopback, never shipped: v2.1.0, the only version the module proxy serves, has reported
# security flaws (docs/e2e.md).
$(BIN)/kube-router: tools/kube-router/go.mod tools/kube-router/go.sum | $(BIN)
	@echo "building kube-router $(KUBE_ROUTER_VERSION) (first time only; how long: docs/performance.md)"
	CGO_ENABLED=0 $(GO) -C tools/kube-router build -trimpath -o $@ \
		-ldflags "$(E2E_LDFLAGS) -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$(KUBE_ROUTER_VERSION)" \
		github.com/cloudnativelabs/kube-router/v2/cmd/kube-router

## node-tools: build the node lane's binaries into bin/.
.PHONY: node-tools
node-tools: $(NODE_TOOLS)

# make e2e reaches the lane's set-up through this prerequisite.
.PHONY: e2e-node
ifeq ($(E2E_NODE),on)
e2e-node: node-packages $(NODE_TOOLS)
else
e2e-node:
	@echo "e2e: E2E_NODE=off: the node lane is off; its TestNode… scenarios will be skipped"
endif

e2e: e2e-node

# After the suite: undo whatever a crashed run left on the host (containers, mounts, network
# namespaces, the bridge, iptables chains, cgroups, sysctls). The suite undoes it itself when it
# stops; this only acts when the node's state file is still there.
# E2E_NODE_DIR is the nodes' directory under E2E_OUTPUT: node here, cluster in the
# production-shaped lane (build/cluster.mk).
E2E_NODE_DIR ?= node
define e2e_node_down
	if [ -s $(E2E_OUTPUT)/$(E2E_NODE_DIR)/state.json ]; then \
		echo "e2e: cleaning up after the real nodes"; \
		$(GO) run -trimpath ./test/e2e/cmd/node-down --output=$(E2E_OUTPUT) --dir=$(E2E_NODE_DIR) || rc=1; \
	fi
endef
