// Package addons installs what every production cluster runs in kube-system before anything
// else: kube-proxy, which makes ClusterIP Services work on each node, and CoreDNS, which makes
// Service names resolve. The manifests are the upstream ones (kubeadm's kube-proxy, Kubernetes'
// CoreDNS add-on) with only the images, addresses and this machine's limits filled in.
package addons

import (
	"bytes"
	"context"
	_ "embed"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

var (
	//go:embed kube-proxy.yaml
	kubeProxyManifest string
	//go:embed coredns.yaml
	corednsManifest string
)

// readyTimeout bounds how long an add-on takes to be Ready on every node.
const readyTimeout = 3 * time.Minute

// KubeProxy installs kube-proxy as a DaemonSet of image, reaching the API server at apiServer
// (https://host:port), with podCIDR as the cluster's pods, and waits until it runs Ready on
// every one of nodes.
func KubeProxy(ctx context.Context, c *kube.Client, image, apiServer, podCIDR string, nodes int) error {
	if err := apply(ctx, c, kubeProxyManifest, map[string]string{"Image": image, "APIServer": apiServer, "PodCIDR": podCIDR}); err != nil {
		return errors.Wrap(err, "cannot install kube-proxy")
	}
	return kube.Wait(ctx, readyTimeout, "kube-proxy Ready on every node", func(ctx context.Context) error {
		ds, err := c.Typed.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if int(ds.Status.NumberReady) < nodes {
			return errors.Errorf("%d of %d nodes' kube-proxy Ready", ds.Status.NumberReady, nodes)
		}
		return nil
	})
}

// CoreDNS installs CoreDNS from image with its Service kube-dns at dnsIP, the address every
// kubelet gives its pods as their resolver, and waits until its Deployment is Available.
func CoreDNS(ctx context.Context, c *kube.Client, image, dnsIP string) error {
	if err := apply(ctx, c, corednsManifest, map[string]string{"Image": image, "DNSIP": dnsIP}); err != nil {
		return errors.Wrap(err, "cannot install CoreDNS")
	}
	return WaitAvailable(ctx, c, "kube-system", "coredns", readyTimeout)
}

// WaitAvailable waits until every replica of the Deployment namespace/name is updated and
// available.
func WaitAvailable(ctx context.Context, c *kube.Client, namespace, name string, timeout time.Duration) error {
	return kube.Wait(ctx, timeout, "Deployment "+namespace+"/"+name+" Available", func(ctx context.Context) error {
		d, err := c.Typed.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return available(d)
	})
}

func available(d *appsv1.Deployment) error {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas > want {
		return errors.Errorf("%d replicas, %d updated, %d available of %d", s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
	}
	return nil
}

// apply fills manifest's template with values and applies every object in it.
func apply(ctx context.Context, c *kube.Client, manifest string, values map[string]string) error {
	t, err := template.New("manifest").Option("missingkey=error").Parse(manifest)
	if err != nil {
		return errors.Wrap(err, "cannot parse the manifest")
	}
	var b bytes.Buffer
	if err := t.Execute(&b, values); err != nil {
		return errors.Wrap(err, "cannot fill in the manifest")
	}
	objs, err := kube.DecodeObjects(b.Bytes())
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := c.Apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}
