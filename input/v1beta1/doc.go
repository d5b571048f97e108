// Package v1beta1 holds the function's Input (memcached.fn.example.com/v1beta1, kind Input):
// the platform team's defaults and policy, set once in a Composition and applied to every
// claim that uses it. Application teams never see it; they see its effects, for example a
// size limit named in their claim's Available condition.
//
// +kubebuilder:object:generate=true
// +groupName=memcached.fn.example.com
// +versionName=v1beta1
package v1beta1
