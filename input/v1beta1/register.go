package v1beta1

import "k8s.io/apimachinery/pkg/runtime/schema"

// SchemeGroupVersion is the group and version of the function's Input.
var SchemeGroupVersion = schema.GroupVersion{Group: "memcached.fn.example.com", Version: "v1beta1"}

// InputKind is the Input's kind. A Composition step that hands the function any other kind
// is a mistake the function reports rather than ignores.
const InputKind = "Input"
