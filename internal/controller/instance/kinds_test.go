package instance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/render/rendertest"
	"github.com/example/function-memcached/internal/resolve"
)

// TestManagedKindsRenderWhatTheFunctionComposes proves that managedKinds' needed and render
// say, for every Memcached, exactly what render.Objects (which the function composes here)
// renders for the Memcached resolve.Remote makes of it, in the same order (without the
// ServiceMonitor and PrometheusRule, which stay with the control plane's Prometheus): a kind added to the renderer and not to managedKinds, or a condition
// changed in one and not the other, fails here rather than running a different set of objects
// in another cluster.
func TestManagedKindsRenderWhatTheFunctionComposes(t *testing.T) {
	cases := rendertest.Variants(t)
	cases["Base"] = rendertest.Base()
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got []string
			for _, o := range render.Objects(resolve.Remote(m)) {
				want = append(want, kindOf(o)+"/"+o.GetName())
			}
			for _, k := range managedKinds {
				if !k.needed(m) {
					continue
				}
				o := k.render(m)
				kind := kindOf(o)
				if o.GetName() != k.name(m.Name) {
					t.Errorf("managedKinds' %s renders %q but is read under %q", k.role, o.GetName(), k.name(m.Name))
				}
				got = append(got, kind+"/"+o.GetName())
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("managedKinds renders another set than render.Objects: -render.Objects, +managedKinds:\n%s", diff)
			}
		})
	}
}

// kindOf names o's kind: its type's name, or, for the unstructured monitoring kinds, its kind.
func kindOf(o render.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := fmt.Sprintf("%T", o)
	return t[strings.LastIndex(t, ".")+1:]
}
