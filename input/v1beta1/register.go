package v1beta1

import "k8s.io/apimachinery/pkg/runtime/schema"

// The Input's group, version and kind, defined here once. A Composition step that hands the
// function any other kind is a mistake the function reports rather than ignores.
const (
	Group   = "memcached.fn.example.com"
	Version = "v1beta1"
	Kind    = "Input"
	// APIVersion is the Input's apiVersion as a pipeline step writes it.
	APIVersion = Group + "/" + Version
)

// SchemeGroupVersion is the group and version of the function's Input.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}
