package render_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

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

// TestKey checks what the keys of Memcacheds are for: equal for equal Memcacheds, whatever
// the form their values were written in, and different for any change of any field.
func TestKey(t *testing.T) {
	base := rendertest.Base()
	if got, again := render.Key(base), render.Key(rendertest.Base()); got != again {
		t.Errorf("Key(Base()) = %q, then %q: want one key for equal Memcacheds", got, again)
	}
	same := rendertest.Base()
	same.CPULimit = ptr.To(resource.MustParse("1000m")) // Base's 1, written otherwise.
	if render.Key(same) != render.Key(base) || rendered(t, same) != rendered(t, base) {
		t.Errorf("CPU limits 1000m and 1 render the same, and Key(...) must be the same for both")
	}
	for p, m := range rendertest.Variants(t) {
		if render.Key(m) == render.Key(base) {
			t.Errorf("Key(...) is the same after a change of %s", p)
		}
	}
	if got, want := string(render.AppendKey([]byte("prefix|"), base)), "prefix|"+render.Key(base); got != want {
		t.Errorf("AppendKey(prefix, m) = %q, want %q", got, want)
	}
}
