package instance

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/lru"
)

// UnchangedStatus is a client of the control plane that skips writing an Instance's status
// when it holds exactly what was read. crossplane-runtime's managed reconciler writes the
// status at the end of every reconcile, changed or not, and with hundreds of Instances polled
// every minute those no-op writes were much of an idle provider's CPU and as many requests to
// the API server (docs/performance-history.md, the provider at scale). A
// write is skipped only when the Instance still has the resourceVersion it was read with, so
// a status that is not the latest one is never taken for unchanged. It remembers at most
// instanceMemoSize Instances: one evicted has its next status written, changed or not, one
// request more.
type UnchangedStatus struct {
	client.Client

	read *lru.Cache[types.NamespacedName, readStatus]
}

type readStatus struct {
	resourceVersion string
	status          v1alpha1.InstanceStatus
}

// NewUnchangedStatus wraps c.
func NewUnchangedStatus(c client.Client) *UnchangedStatus {
	return &UnchangedStatus{Client: c, read: lru.New[types.NamespacedName, readStatus](instanceMemoSize)}
}

// Get reads obj, remembering an Instance's status as read, and forgetting an Instance that is
// gone.
func (c *UnchangedStatus) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	i, ok := obj.(*v1alpha1.Instance)
	switch {
	case !ok:
	case kerrors.IsNotFound(err):
		c.read.Remove(key)
	case err == nil:
		c.remember(i)
	}
	return err
}

// remember remembers the status of i as it is now.
func (c *UnchangedStatus) remember(i *v1alpha1.Instance) {
	c.read.Add(types.NamespacedName{Namespace: i.GetNamespace(), Name: i.GetName()}, readStatus{resourceVersion: i.GetResourceVersion(), status: *i.Status.DeepCopy()})
}

// Status writes statuses, but not an Instance's that did not change.
func (c *UnchangedStatus) Status() client.SubResourceWriter {
	return unchangedStatusWriter{SubResourceWriter: c.Client.Status(), c: c}
}

// unchanged reports whether i holds the status it was read with, at the same version.
func (c *UnchangedStatus) unchanged(i *v1alpha1.Instance) bool {
	r, ok := c.read.Get(types.NamespacedName{Namespace: i.GetNamespace(), Name: i.GetName()})
	return ok && r.resourceVersion == i.GetResourceVersion() && equality.Semantic.DeepEqual(r.status, i.Status)
}

type unchangedStatusWriter struct {
	client.SubResourceWriter
	c *UnchangedStatus
}

func (w unchangedStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if i, ok := obj.(*v1alpha1.Instance); ok && len(opts) == 0 && w.c.unchanged(i) {
		return nil
	}
	err := w.SubResourceWriter.Update(ctx, obj, opts...)
	if i, ok := obj.(*v1alpha1.Instance); ok && err == nil {
		// What was written is what the next reconcile reads, once the cache has it.
		w.c.remember(i)
	}
	return err
}

// withClient is a manager whose client is another.
type withClient struct {
	manager.Manager
	client client.Client
}

func (m withClient) GetClient() client.Client { return m.client }
