# The production-shaped lane's tools (issue "Installed as users install it"): Helm, to install
# Crossplane from the chart in the pinned Crossplane module; CoreDNS, the cluster DNS; and
# kube-proxy, from the same Kubernetes module as the control plane. Included after
# build/e2e.mk (K8S_VERSION, E2E_LDFLAGS). Not part of `make e2e` yet: the lane is being built.
#
#   make cluster-tools   build bin/helm, bin/coredns and bin/kube-proxy

HELM_VERSION := v3.19.0
CLUSTER_TOOLS := $(BIN)/helm $(BIN)/coredns $(BIN)/kube-proxy

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

## cluster-tools: build the production-shaped lane's Helm, CoreDNS and kube-proxy.
.PHONY: cluster-tools
cluster-tools: $(CLUSTER_TOOLS)
