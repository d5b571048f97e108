// Package e2e is the end-to-end suite: Memcached claims and namespaced XRs applied to a real
// kube-apiserver with real Crossplane, which calls the function from its real package over
// mTLS. Its tests carry the e2e build tag, so the unit suite (`go test ./...`) does not run
// them; `make e2e` builds what they need and runs them. See docs/e2e.md.
package e2e
