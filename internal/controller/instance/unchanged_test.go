package instance

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

func TestUnchangedStatus(t *testing.T) {
	// A status write is skipped only when it holds exactly what was read, at the version it
	// was read at.
	key := types.NamespacedName{Namespace: "platform", Name: "sessions"}
	cases := map[string]struct {
		reason string
		change func(t *testing.T, c client.Client, i *v1alpha1.Instance)
		writes int
	}{
		"Unchanged": {
			reason: "A reconcile that changed nothing writes nothing.",
			change: func(*testing.T, client.Client, *v1alpha1.Instance) {},
			writes: 0,
		},
		"Changed": {
			reason: "A new condition is written.",
			change: func(_ *testing.T, _ client.Client, i *v1alpha1.Instance) {
				i.SetConditions(xpv2.ReconcileError(errBoom))
			},
			writes: 1,
		},
		"NewerVersion": {
			reason: "An Instance updated since it was read (a finalizer added) is written, whatever its status.",
			change: func(t *testing.T, c client.Client, i *v1alpha1.Instance) {
				i.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
				if err := c.Update(context.Background(), i); err != nil {
					t.Fatal(err)
				}
			},
			writes: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			writes := 0
			cp := interceptor.NewClient(controlPlane(t, instance(was(available))), interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					writes++
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
			})
			c := NewUnchangedStatus(cp)
			i := &v1alpha1.Instance{}
			if err := c.Get(context.Background(), key, i); err != nil {
				t.Fatal(err)
			}
			tc.change(t, c, i)
			if err := c.Status().Update(context.Background(), i); err != nil {
				t.Fatal(err)
			}
			if writes != tc.writes {
				t.Errorf("\n%s\nStatus().Update(...) wrote %d times, want %d", tc.reason, writes, tc.writes)
			}
		})
	}
}
