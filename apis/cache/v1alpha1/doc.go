// Package v1alpha1 holds the Go types of the Memcached API (group cache.example.com,
// composite XMemcached, claim Memcached). They are the single source of the XRD's schema:
// `make generate` derives example/definition.yaml from them, and a test fails when the two
// disagree, so the function and the API the platform team installs can never drift apart.
//
// +kubebuilder:object:generate=true
// +groupName=cache.example.com
// +versionName=v1alpha1
package v1alpha1
