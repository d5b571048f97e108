// Package render turns a resolved Memcached into the Kubernetes objects that run it: a
// Deployment, a headless Service, a PodDisruptionBudget, a NetworkPolicy, the Secret holding
// its credentials, a ServiceMonitor and a connection Secret. It is the
// one definition of "what a Memcached deployment looks like", shared by the composition
// function and the managed-resource controller. Every function here is pure: a Memcached in,
// an object out, no I/O, so each rule is a table test away.
package render
