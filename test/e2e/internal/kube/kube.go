// Package kube is the suite's Kubernetes client: server-side apply of YAML files and objects
// of any kind, the table API behind `kubectl get`, and waiting for a condition with a
// message that says what was last seen. It talks to whichever API server its rest.Config
// names, so the same helpers serve the control plane and a second, workload API server.
package kube

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// FieldManager is the server-side apply field manager of everything the suite applies.
const FieldManager = "e2e"

// Client reaches one API server with a typed, a dynamic and a discovery client.
type Client struct {
	Config  *rest.Config
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// FromKubeconfig returns a Client for the kubeconfig file at path.
func FromKubeconfig(path string) (*Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot load kubeconfig %s", path)
	}
	return New(cfg)
}

// New returns a Client for cfg. It raises client-side rate limits: the suite polls often and
// must not wait on its own throttling.
func New(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a typed client")
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a dynamic client")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a discovery client")
	}
	return &Client{Config: cfg, Typed: typed, Dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Mapping returns the REST mapping of gvk, refreshing discovery once when the kind is new
// (a CRD or an XRD established since the last look).
func (c *Client) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, errors.Wrapf(err, "cannot find the resource of %s", gvk)
}

// Resource returns the dynamic client of gvk in namespace (ignored for cluster-scoped kinds).
func (c *Client) Resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(namespace), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// Apply server-side applies u, taking ownership of every field it sets, and returns the
// object as stored.
func (c *Client) Apply(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.Resource(u.GroupVersionKind(), u.GetNamespace())
	if err != nil {
		return nil, err
	}
	out, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return out, errors.Wrapf(err, "cannot apply %s %q", u.GetKind(), u.GetName())
}

// ApplyFile server-side applies every object of the multi-document YAML file at path.
func (c *Client) ApplyFile(ctx context.Context, path string) ([]*unstructured.Unstructured, error) {
	objs, err := ReadObjects(path)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		a, err := c.Apply(ctx, o)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot apply %s", path)
		}
		out = append(out, a)
	}
	return out, nil
}

// Get returns the object of kind gvk named name in namespace.
func (c *Client) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	r, err := c.Resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, name, metav1.GetOptions{})
}

// Delete deletes the object of kind gvk named name in namespace, in the foreground unless
// background is set; an object already gone is not an error.
func (c *Client) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	r, err := c.Resource(gvk, namespace)
	if err != nil {
		return err
	}
	err = r.Delete(ctx, name, metav1.DeleteOptions{})
	if kerrors.IsNotFound(err) {
		return nil
	}
	return errors.Wrapf(err, "cannot delete %s %s/%s", gvk.Kind, namespace, name)
}

// MergePatch applies a JSON merge patch to the object of kind gvk named name in namespace.
func (c *Client) MergePatch(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, patch []byte) (*unstructured.Unstructured, error) {
	r, err := c.Resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	out, err := r.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return out, errors.Wrapf(err, "cannot patch %s %s/%s", gvk.Kind, namespace, name)
}

// Table lists gvk in namespace as the table `kubectl get` prints: the API server renders the
// columns, from additionalPrinterColumns for custom resources.
func (c *Client) Table(ctx context.Context, gvk schema.GroupVersionKind, namespace string) (*metav1.Table, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	path := "/apis/" + m.Resource.Group + "/" + m.Resource.Version
	if m.Resource.Group == "" {
		path = "/api/" + m.Resource.Version
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		path += "/namespaces/" + namespace
	}
	path += "/" + m.Resource.Resource
	b, err := c.Typed.CoreV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		return nil, errors.Wrapf(err, "cannot get the table of %s", m.Resource)
	}
	t := &metav1.Table{}
	return t, errors.Wrap(unmarshalJSON(b, t), "cannot decode the table")
}

// EnsureNamespace creates namespace name with labels, or updates the labels of an existing
// one.
func (c *Client) EnsureNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
	u, err := ToUnstructured(ns)
	if err != nil {
		return err
	}
	_, err = c.Apply(ctx, u)
	return err
}

// ReadObjects decodes every non-empty document of the YAML file at path.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path) //nolint:gosec // The suite reads the repository's examples.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", path)
	}
	return DecodeObjects(b)
}

// DecodeObjects decodes every non-empty document of a multi-document YAML stream.
func DecodeObjects(b []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, errors.Wrap(err, "cannot decode YAML")
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// Wait calls check every 250ms until it returns nil or timeout passes. The error says what
// was awaited and carries check's last error: the state a person would want to see. Each
// check may run up to checkGrace past the timeout, so that the last one is not cut short
// by the deadline (a client's rate limiter refuses to wait past it and fails at once),
// which would report the deadline instead of the state.
func Wait(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(checkGrace))
	defer cancel()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		// A check cut short by the context says nothing about the state: keep the one before.
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return errors.Errorf("timed out after %s waiting for %s: %v", timeout, what, last)
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// checkGrace is how long past Wait's timeout its last check may take.
const checkGrace = 15 * time.Second
