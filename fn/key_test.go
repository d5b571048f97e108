package fn

import (
	"reflect"
	"testing"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/render/rendertest"
)

// TestEverySpecFieldKeysTheRenderCache proves that the render cache tells every two
// renderings apart: a change of any field of render.Memcached, or of anything else renderAll
// renders from, is another key. A field missing from the key would serve a rendering of
// another spec.
func TestEverySpecFieldKeysTheRenderCache(t *testing.T) {
	edge := &cachev1alpha1.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "edge"}
	type args = renderInput
	key := func(a args) lru.Key {
		k, err := lru.KeyOf(a)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := args{M: rendertest.Base(), Placement: edge, InstanceKey: KeyInstance, InstanceName: "sessions"}
	cases := map[string]args{}
	for p, m := range rendertest.Variants(t) {
		a := base
		a.M = m
		cases["render.Memcached."+p] = a
	}
	with := func(f func(*args)) args {
		a := base
		f(&a)
		return a
	}
	cases["namespaced"] = with(func(a *args) { a.Namespaced = true })
	cases["here"] = with(func(a *args) { a.Placement = nil })
	cases["placement.kind"] = with(func(a *args) {
		a.Placement = &cachev1alpha1.ProviderConfigReference{Kind: "ProviderConfig", Name: "edge"}
	})
	cases["placement.name"] = with(func(a *args) {
		a.Placement = &cachev1alpha1.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "core"}
	})
	cases["instanceKey"] = with(func(a *args) { a.InstanceKey = KeyInstance + "-edge" })
	cases["instanceName"] = with(func(a *args) { a.InstanceName = "sessions-edge" })
	if key(with(func(a *args) { a.M = rendertest.Base() })) != key(base) {
		t.Fatal("the render key differs for equal arguments")
	}
	for name, a := range cases {
		if key(a) == key(base) {
			t.Errorf("the render key is the same after a change of %s: a rendering of the old spec would be served", name)
		}
	}
}

// TestKeyTypes checks that the function's cache keys cover every field of what they key
// (lru.Keyable): a field lru.KeyOf leaves out would let two inputs share a rendering or a TLS
// verdict.
func TestKeyTypes(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[renderInput](), reflect.TypeFor[tlsVerdictInput](), reflect.TypeFor[render.Memcached]()} {
		if err := lru.Keyable(typ); err != nil {
			t.Error(err)
		}
	}
}
