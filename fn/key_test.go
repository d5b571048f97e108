package fn

import (
	"testing"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/render/rendertest"
)

// TestEverySpecFieldKeysTheRenderCache proves that the render cache tells every two
// renderings apart: a change of any field of render.Memcached, or of anything else renderAll
// renders from, is another key. A field missing from the key would serve a rendering of
// another spec.
func TestEverySpecFieldKeysTheRenderCache(t *testing.T) {
	edge := &cachev1alpha1.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "edge"}
	type args struct {
		m                         render.Memcached
		namespaced                bool
		placement                 *cachev1alpha1.ProviderConfigReference
		instanceKey, instanceName string
	}
	key := func(a args) string {
		return string(appendRenderKey(nil, a.m, a.namespaced, a.placement, a.instanceKey, a.instanceName))
	}
	base := args{m: rendertest.Base(), placement: edge, instanceKey: KeyInstance, instanceName: "sessions"}
	cases := map[string]args{}
	for p, m := range rendertest.Variants(t) {
		a := base
		a.m = m
		cases["render.Memcached."+p] = a
	}
	with := func(f func(*args)) args {
		a := base
		f(&a)
		return a
	}
	cases["namespaced"] = with(func(a *args) { a.namespaced = true })
	cases["here"] = with(func(a *args) { a.placement = nil })
	cases["placement.kind"] = with(func(a *args) {
		a.placement = &cachev1alpha1.ProviderConfigReference{Kind: "ProviderConfig", Name: "edge"}
	})
	cases["placement.name"] = with(func(a *args) {
		a.placement = &cachev1alpha1.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "core"}
	})
	cases["instanceKey"] = with(func(a *args) { a.instanceKey = KeyInstance + "-edge" })
	cases["instanceName"] = with(func(a *args) { a.instanceName = "sessions-edge" })
	if key(with(func(a *args) { a.m = rendertest.Base() })) != key(base) {
		t.Fatal("appendRenderKey(...) differs for equal arguments")
	}
	for name, a := range cases {
		if key(a) == key(base) {
			t.Errorf("appendRenderKey(...) is the same after a change of %s: a rendering of the old spec would be served", name)
		}
	}
}
