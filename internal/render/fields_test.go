package render_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/render/rendertest"
)

// TestEverySpecFieldRenders proves that every field of render.Memcached is rendered: changing
// any one changes some rendered object (render.Objects, the connection Secret) or a connection
// detail. A field nothing reads fails here.
func TestEverySpecFieldRenders(t *testing.T) {
	base := rendered(t, rendertest.Base())
	for p, m := range rendertest.Variants(t) {
		t.Run(p, func(t *testing.T) {
			if rendered(t, m) == base {
				t.Errorf("changing render.Memcached.%s changes no rendered object and no connection detail: render it, or drop the field", p)
			}
		})
	}
}

// rendered is everything rendered for m, as one JSON document.
func rendered(t *testing.T, m render.Memcached) string {
	t.Helper()
	var objs []any
	for _, o := range append(render.Objects(m), render.ConnectionSecret(m)) {
		u, err := render.ToApply(o)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u.Object)
	}
	b, err := json.Marshal(map[string]any{"objects": objs, "connection": render.ConnectionDetails(m)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKey checks what the keys of Memcacheds (lru.KeyOf, which keys the function's render
// cache and the provider's drift verdicts) are for: equal for equal Memcacheds, whatever the
// form their values were written in, and different for any change of any field.
func TestKey(t *testing.T) {
	key := func(m render.Memcached) lru.Key {
		k, err := lru.KeyOf(m)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := rendertest.Base()
	if key(base) != key(rendertest.Base()) {
		t.Error("two keys for equal Memcacheds")
	}
	same := rendertest.Base()
	same.CPULimit = ptr.To(resource.MustParse("1000m")) // Base's 1, written otherwise.
	if key(same) != key(base) || rendered(t, same) != rendered(t, base) {
		t.Errorf("CPU limits 1000m and 1 render the same, and their keys must be the same")
	}
	for p, m := range rendertest.Variants(t) {
		if key(m) == key(base) {
			t.Errorf("the key is the same after a change of %s", p)
		}
	}
}
