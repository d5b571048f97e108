//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// pullFailures are the reasons the kubelet gives a container whose image cannot be pulled.
var pullFailures = []string{"ErrImagePull", "ImagePullBackOff"}

// notAvailableBecause accepts a claim that is not Available while its pods wait with
// podReason, as the real kubelet reports it, and whose Available message says so (the Input's
// diagnostics.pods, on by default). The kubelet alternates ErrImagePull and ImagePullBackOff,
// so the claim, a reconcile behind, may name the other one.
func notAvailableBecause(podReason string) func(memcached) error {
	return func(m memcached) error {
		if podReason == "" {
			return errors.New("no pod reports an image pull failure yet")
		}
		if m.Synced != "True" || m.Available == "True" || m.Ready == "True" {
			return errors.Errorf("want Synced=True, not Available and not Ready while the pods report %s", podReason)
		}
		if !slices.ContainsFunc(pullFailures, func(r string) bool { return strings.Contains(m.Message, r) }) {
			return errors.Errorf("want the claim's Available message to carry the pods' reason %s", podReason)
		}
		return nil
	}
}

// A claim naming an image tag the registry does not have runs pods the real kubelet cannot
// start: they report ErrImagePull or ImagePullBackOff, and the claim is not Available. Fixing
// the image brings it to Available with pods running the new one.
func TestNodeBrokenImage(t *testing.T) {
	requireNode(t)
	t.Parallel()
	ns := newNodeNamespace(t, "node-image")
	const name = "sessions"
	broken := env.Images.Registry + "/e2e/memcached:does-not-exist"
	apply(t, newNodeClaim(ns, name, 1, map[string]any{"image": broken}))

	var podReason, podMessage string
	waitMemcached(t, claimGVK, ns, name, "not Available while the image cannot be pulled", func(m memcached) error {
		pods, err := livePods(context.Background(), ns, name)
		if err != nil {
			return err
		}
		for _, p := range pods {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && s.Image == broken {
					for _, r := range pullFailures {
						if w.Reason == r {
							podReason, podMessage = w.Reason, w.Message
						}
					}
				}
			}
		}
		return notAvailableBecause(podReason)(m)
	})
	m, err := getMemcached(context.Background(), claimGVK, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pods: %s: %s; claim: %s", podReason, podMessage, m)

	fix := fmt.Appendf(nil, `{"spec":{"image":%q}}`, env.Images.Memcached)
	if _, err := env.Kube.MergePatch(context.Background(), claimGVK, ns, name, fix); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, claimGVK, ns, name, 1)
	pods := waitPodsReady(t, ns, name, 1)
	if got := pods[0].Spec.Containers[0].Image; got != env.Images.Memcached {
		t.Errorf("pod runs image %q, want the fixed %q", got, env.Images.Memcached)
	}
	err = kube.Wait(context.Background(), defaultTimeout, "the broken pods gone", func(ctx context.Context) error {
		pods, err := livePods(ctx, ns, name)
		if err != nil {
			return err
		}
		if len(pods) != 1 {
			return errors.Errorf("%d pods", len(pods))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
