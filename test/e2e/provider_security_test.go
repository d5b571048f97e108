//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	memcachedv1alpha1 "github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/pki"
)

var networkPolicyGVK = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}

// remoteSecuredComposition is the Composition of a platform that requires authentication and
// a NetworkPolicy of every claim, wherever it runs: the example's Input with
// policy.requireAuth and policy.requireNetworkPolicy. It is not labelled as the policy of
// Instances (only the example Composition is), so it disturbs no other scenario; the provider
// resolves the composed Instances with the example's Input, which carries the same defaults.
const remoteSecuredComposition = "xmemcacheds-remote-secured.cache.example.com"

var remoteSecuredComposed setUp

func requireRemoteSecuredComposition(t *testing.T) {
	t.Helper()
	remoteSecuredComposed.require(t, func(ctx context.Context) error {
		in, err := exampleInput()
		if err != nil {
			return err
		}
		policy, _ := in["policy"].(map[string]any)
		policy["requireAuth"] = true
		policy["requireNetworkPolicy"] = true
		return applyCompositionFromExample(ctx, remoteSecuredComposition, "", in)
	})
}

// exampleInput is a copy of the function Input of example/composition.yaml, the Composition
// labelled as the policy of Instances.
func exampleInput() (map[string]any, error) {
	objs, err := env.Example("composition.yaml")
	if err != nil || len(objs) != 1 {
		return nil, errors.Errorf("cannot read example/composition.yaml as one Composition: %v", err)
	}
	steps, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "pipeline")
	if len(steps) != 1 {
		return nil, errors.Errorf("example/composition.yaml has %d pipeline steps, want 1", len(steps))
	}
	in, ok := steps[0].(map[string]any)["input"].(map[string]any)
	if !ok {
		return nil, errors.New("example/composition.yaml's step has no input")
	}
	return in, nil
}

// instanceSettings are the settings the provider resolves Instances with: the example
// Composition's Input, as package resolve reads it.
func instanceSettings(t *testing.T) resolve.Settings {
	t.Helper()
	in, err := exampleInput()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var input v1beta1.Input
	if err := json.Unmarshal(b, &input); err != nil {
		t.Fatal(err)
	}
	s, err := resolve.NewSettings(&input)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A claim under a platform that requires authentication and a NetworkPolicy, placed in
// workload-a (spec.providerConfigRef) with TLS from a cert-manager-style Secret written in its
// target namespace there, gets the same Memcached it would get here:
//
//   - the provider generates the credentials in workload-a's auth Secret, copies the TLS pair
//     to <name>-tls-active there, and the remote Deployment mounts both (not the tenant's
//     Secret); nothing of either is in the control plane;
//   - the claim's connection Secret (and the Instance's) holds endpoint, host, port, the
//     username and password that workload-a's auth Secret holds, tls and the CA, and the
//     certificate the remote pods mount verifies against that CA for that host;
//   - a new spec.auth.rotation replaces the credentials exactly once: the remote auth Secret,
//     the connection Secret and the pod template's digest change once and then stay (watched
//     for 45 s, more than two of the suite's --poll=20s);
//   - the NetworkPolicy in workload-a is render.NetworkPolicy of the Memcached the provider
//     resolves from the Instance (its allowedNamespaces and the monitoring namespace of the
//     platform's policy, egress included), labelled as the Instance's;
//   - moved to workload-b, the claim gets new credentials there, its connection Secret
//     follows, and workload-a keeps nothing of it (no Deployment, Service, PodDisruptionBudget,
//     auth Secret, TLS copy or NetworkPolicy) but the tenant's own TLS Secret.
//
// TestProviderRefusedCertificate renews the TLS Secret of a second such claim wrongly, beside
// this one: each waits out a window in which nothing may change, and one after the other they
// made this the lane's longest scenario.
//
// The workload clusters' pods run on kwok's fake nodes, so no client connects to them: the
// certificate is verified as a client would, offline, and the node lane's TestNodeAuthAndTLS
// proves that the same rendered Deployment serves TLS and authenticates (docs/e2e.md, "What
// is fake").
func TestProviderAuthTLSNetworkPolicy(t *testing.T) {
	requireRemoteSecuredComposition(t)
	t.Parallel()
	ctx := context.Background()
	a, b := workloads(t)
	c := newSecuredRemote(t, "remote-secured", a, b)
	ns, name, host, ca, inst, creds := c.ns, c.name, c.host, c.ca, c.inst, c.creds
	t.Run("the remote Deployment mounts the remote auth Secret and the TLS copy", func(t *testing.T) {
		d := remoteDeployment(t, a, ns, name)
		mounted := secretVolumes(d)
		if !slices.Contains(mounted, name+render.AuthSecretSuffix) || !slices.Contains(mounted, name+render.TLSSecretSuffix) || slices.Contains(mounted, name+"-tls") {
			t.Errorf("the remote pods mount Secrets %v: want %s and %s, not the tenant's %s", mounted, name+render.AuthSecretSuffix, name+render.TLSSecretSuffix, name+"-tls")
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--auth-file="+render.AuthDir+"/"+render.AuthFileKey) || !slices.Contains(args, "--enable-ssl") {
			t.Errorf("memcached args %v: want --auth-file and --enable-ssl", args)
		}
		if d.Spec.Template.Annotations[render.AnnotationCredentials] == "" || d.Spec.Template.Annotations[render.AnnotationCertificate] == "" {
			t.Errorf("pod template annotations %v: want the credentials' and the certificate's digests", d.Spec.Template.Annotations)
		}
		active := getOn(t, a.Kube, secretGVK, ns, name+render.TLSSecretSuffix)
		if active == nil || active.GetLabels()[labelInstanceUID] != string(inst.GetUID()) {
			t.Fatalf("the TLS copy %s in %s: %v, want it labelled as the Instance's", name+render.TLSSecretSuffix, a.Config, active)
		}
		tenant := getOn(t, a.Kube, secretGVK, ns, name+"-tls")
		if data(active)[corev1.TLSCertKey] != data(tenant)[corev1.TLSCertKey] {
			t.Error("the TLS copy does not hold the tenant's certificate")
		}
		// Credentials and the pair live where the Memcached runs, not here.
		for _, s := range []string{name + render.AuthSecretSuffix, name + render.TLSSecretSuffix} {
			if exists(t, secretGVK, ns, s) {
				t.Errorf("Secret %s/%s exists in the control plane, want it in %s only", ns, s, a.Config)
			}
		}
	})
	t.Run("the connection Secrets hold the published details", func(t *testing.T) {
		want := map[string]string{
			"endpoint": host + ":11211", "host": host, "port": "11211", "srv": "_memcached._tcp." + host,
			"username": creds.username, "password": creds.password, "tls": "true", "ca.crt": string(ca.CertPEM),
		}
		waitPublished(t, ns, name+"-memcached", want)
		cd := connectionDetails(t, ns, name+"-memcached")
		// What a client would do, were the pods real (they run on kwok's fake nodes there):
		// verify the pair the pods mount against the connection Secret's ca.crt and host.
		if err := verifiable(data(getOn(t, a.Kube, secretGVK, ns, name+render.TLSSecretSuffix))[corev1.TLSCertKey], cd["ca.crt"], cd["host"]); err != nil {
			t.Errorf("a client verifying with the connection Secret's ca.crt and host would refuse the certificate the remote pods serve: %v", err)
		}
		ref, _, _ := unstructured.NestedString(inst.Object, "spec", "writeConnectionSecretToRef", "name")
		if ref == "" {
			t.Fatal("the composed Instance has no spec.writeConnectionSecretToRef")
		}
		waitPublished(t, ns, ref, want)

		// The Instance's connection Secret deleted by hand is published again at once, not
		// at the settled Instance's next poll.
		waitInstance(t, ns, name, "settled", func(i instance) error {
			if i.Synced != "True" || i.Ready != "True" {
				return errors.New("want Ready and Synced True")
			}
			return nil
		})
		deleted := time.Now()
		if err := env.Kube.Delete(ctx, secretGVK, ns, ref); err != nil {
			t.Fatal(err)
		}
		waitPublished(t, ns, ref, want)
		wokenIn(t, "the Instance's connection Secret deleted by hand was published again", deleted)
	})
	t.Run("the NetworkPolicy in the workload cluster is the rendered one", func(t *testing.T) {
		var i memcachedv1alpha1.Instance
		if err := kube.FromUnstructured(get(t, instanceGVK, ns, name), &i); err != nil {
			t.Fatal(err)
		}
		m, errs := remote.Memcached(&i, instanceSettings(t))
		if len(errs) > 0 {
			t.Fatalf("the Instance does not resolve: %v", errs)
		}
		want := render.NetworkPolicy(m)
		np, err := a.Kube.Typed.NetworkingV1().NetworkPolicies(ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the NetworkPolicy %s/%s in %s: %v", ns, want.Name, a.Config, err)
		}
		if diff := cmp.Diff(want.Spec, np.Spec, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("the NetworkPolicy in %s is not render.NetworkPolicy of the resolved Memcached (-want +got):\n%s", a.Config, diff)
		}
		for k, v := range want.Labels {
			if np.Labels[k] != v {
				t.Errorf("NetworkPolicy label %s=%q, want %q", k, np.Labels[k], v)
			}
		}
		if np.Labels[labelInstanceUID] != string(inst.GetUID()) {
			t.Errorf("the NetworkPolicy is labelled %v, want %s=%s", np.Labels, labelInstanceUID, inst.GetUID())
		}
		if m.NetworkPolicy == nil || m.NetworkPolicy.MonitoringNamespace == "" || len(np.Spec.Ingress) != 2 || !slices.Contains(np.Spec.PolicyTypes, "Egress") {
			t.Errorf("ingress %+v, policy types %v: want the clients' rule, the monitoring namespace's, and Egress", np.Spec.Ingress, np.Spec.PolicyTypes)
		}
	})

	t.Run("a new spec.auth.rotation replaces the credentials exactly once", func(t *testing.T) {
		digest := remoteDeployment(t, a, ns, name).Spec.Template.Annotations[render.AnnotationCredentials]
		if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(`{"spec":{"auth":{"rotation":"2026-12-02"}}}`)); err != nil {
			t.Fatal(err)
		}
		rotated := waitRemoteCredentials(t, a, ns, name, inst, creds.password)
		creds = rotated
		waitPublished(t, ns, name+"-memcached", map[string]string{"username": rotated.username, "password": rotated.password})
		if s := getOn(t, a.Kube, secretGVK, ns, name+render.AuthSecretSuffix); s.GetAnnotations()[render.AnnotationRotation] != "2026-12-02" {
			t.Errorf("the remote auth Secret records rotation %q, want 2026-12-02", s.GetAnnotations()[render.AnnotationRotation])
		}
		waitOn(t, a.Kube, deploymentGVK, ns, name, "the pod template rolls with the new credentials", func(u *unstructured.Unstructured) error {
			got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", render.AnnotationCredentials)
			if got == digest || got == "" {
				return errors.Errorf("%s is still %q", render.AnnotationCredentials, got)
			}
			return nil
		})
		waitAvailable(t, claimGVK, ns, name, 2)
		after := remoteDeployment(t, a, ns, name).Spec.Template.Annotations[render.AnnotationCredentials]
		ref, _, _ := unstructured.NestedString(get(t, instanceGVK, ns, name).Object, "spec", "writeConnectionSecretToRef", "name")
		// No second rotation: not by the provider's next polls, not by the function's.
		deadline := time.Now().Add(45 * time.Second)
		for time.Now().Before(deadline) {
			remoteAuth := data(getOn(t, a.Kube, secretGVK, ns, name+render.AuthSecretSuffix))
			switch {
			case remoteAuth["password"] != rotated.password:
				t.Fatal("the remote auth Secret's password changed a second time")
			case connectionDetails(t, ns, name+"-memcached")["password"] != rotated.password:
				t.Fatal("the claim's connection Secret's password changed a second time")
			case ref != "" && connectionDetails(t, ns, ref)["password"] != rotated.password:
				t.Fatal("the Instance's connection Secret's password changed a second time")
			case remoteDeployment(t, a, ns, name).Spec.Template.Annotations[render.AnnotationCredentials] != after:
				t.Fatal("the pod template's credentials digest changed a second time: the pods rolled again")
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("moved to another cluster, it gets new credentials there and the old cluster keeps nothing", func(t *testing.T) {
		oldRef, _, _ := unstructured.NestedString(get(t, instanceGVK, ns, name).Object, "spec", "writeConnectionSecretToRef", "name")
		start := time.Now()
		if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(`{"spec":{"providerConfigRef":{"kind":"ClusterProviderConfig","name":"`+b.Config+`"}}}`)); err != nil {
			t.Fatal(err)
		}
		var moved *unstructured.Unstructured
		err := kube.Wait(ctx, gcTimeout, "the claim's one Instance in "+b.Config, func(ctx context.Context) error {
			r, err := env.Kube.Resource(instanceGVK, ns)
			if err != nil {
				return err
			}
			l, err := r.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(l.Items) != 1 {
				return errors.Errorf("%d Instances", len(l.Items))
			}
			if cfg, _, _ := unstructured.NestedString(l.Items[0].Object, "spec", "providerConfigRef", "name"); cfg != b.Config {
				return errors.Errorf("the Instance is placed by %s", cfg)
			}
			moved = &l.Items[0]
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, claimGVK, ns, name, 2)
		there := waitRemoteCredentials(t, b, ns, name, moved, creds.password)
		t.Logf("moved to %s: Available with new credentials there after %.1fs", b.Config, time.Since(start).Seconds())
		waitPublished(t, ns, name+"-memcached", map[string]string{
			"host": host, "username": there.username, "password": there.password, "tls": "true", "ca.crt": string(ca.CertPEM),
		})
		t.Logf("the claim's connection Secret holds them %.1fs after the move", time.Since(start).Seconds())
		if mounted := secretVolumes(remoteDeployment(t, b, ns, name)); !slices.Contains(mounted, name+render.AuthSecretSuffix) || !slices.Contains(mounted, name+render.TLSSecretSuffix) {
			t.Errorf("the pods in %s mount Secrets %v: want the auth Secret and the TLS copy", b.Config, mounted)
		}
		if np := getOn(t, b.Kube, networkPolicyGVK, ns, name); np == nil || np.GetLabels()[labelInstanceUID] != string(moved.GetUID()) {
			t.Errorf("the NetworkPolicy in %s: %v, want it labelled as the new Instance's", b.Config, np)
		}
		for _, o := range []struct {
			gvk  schema.GroupVersionKind
			name string
		}{
			{deploymentGVK, name}, {serviceGVK, name}, {pdbGVK, name}, {networkPolicyGVK, name},
			{secretGVK, name + render.AuthSecretSuffix}, {secretGVK, name + render.TLSSecretSuffix},
		} {
			waitGoneOn(t, a.Kube, gcTimeout, o.gvk, ns, o.name)
		}
		if getOn(t, a.Kube, secretGVK, ns, name+"-tls") == nil {
			t.Errorf("the tenant's TLS Secret %s/%s in %s was deleted: it is not the Instance's", ns, name+"-tls", a.Config)
		}
		if newRef, _, _ := unstructured.NestedString(moved.Object, "spec", "writeConnectionSecretToRef", "name"); oldRef != "" && oldRef != newRef {
			waitGone(t, gcTimeout, secretGVK, ns, oldRef)
		}
	})

	if err := env.Kube.Delete(ctx, claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gcTimeout, claimGVK, ns, name)
	for _, n := range []string{name, name + render.AuthSecretSuffix, name + render.TLSSecretSuffix} {
		gvk := secretGVK
		if n == name {
			gvk = deploymentGVK
			waitGoneOn(t, b.Kube, gcTimeout, networkPolicyGVK, ns, n)
		}
		waitGoneOn(t, b.Kube, gcTimeout, gvk, ns, n)
	}
}

// securedRemote is a claim composed by remoteSecuredComposition and placed in workload-a, with
// TLS from a cert-manager-style Secret written in each of its workload clusters, Available with
// its first credentials.
type securedRemote struct {
	ns, name, host string
	ca             *pki.CA
	inst           *unstructured.Unstructured
	creds          credentials
}

// newSecuredRemote creates a team namespace with prefix in a and the others, a claim of two
// replicas in a, and waits until it is Available and a's auth Secret holds its credentials.
func newSecuredRemote(t *testing.T, prefix string, a *workloadCluster, others ...*workloadCluster) securedRemote {
	t.Helper()
	ns := team(t, prefix, append([]*workloadCluster{a}, others...)...)
	const name = "sessions"
	c := securedRemote{ns: ns, name: name, host: name + "." + ns + ".svc.cluster.local", ca: newCA(t)}
	// cert-manager in each workload cluster writes the Certificate's Secret in the target
	// namespace there; the claim names it.
	for _, w := range append([]*workloadCluster{a}, others...) {
		writeTLSSecretOn(t, w.Kube, c.ca, ns, name+"-tls", name)
	}

	claim := remoteClaim(ns, name, a.Config, 2)
	spec := claim.Object["spec"].(map[string]any)
	spec["compositionRef"] = map[string]any{"name": remoteSecuredComposition}
	spec["tls"] = map[string]any{"secretName": name + "-tls"}
	// The example's default mode is ClientCertificate; these scenarios follow a username and
	// password from the workload cluster's auth Secret to the connection Secrets.
	spec["auth"] = map[string]any{"mode": "Password"}
	spec["metrics"] = map[string]any{"enabled": true}
	spec["networkPolicy"] = map[string]any{"allowedNamespaces": map[string]any{"matchExpressions": []any{
		map[string]any{"key": corev1.LabelMetadataName, "operator": "In", "values": []any{"web"}},
	}}}
	start := time.Now()
	apply(t, claim)
	waitAvailable(t, claimGVK, ns, name, 2)
	t.Logf("claim %s/%s Available in %s after %.1fs", ns, name, a.Config, time.Since(start).Seconds())
	c.inst = get(t, instanceGVK, ns, name)
	c.creds = waitRemoteCredentials(t, a, ns, name, c.inst, "")
	return c
}

// A TLS Secret in the workload cluster renewed with a pair for another host is InvalidSpec
// naming spec.forProvider.tls.secretName on the Instance and tls.secretName on the claim, and
// changes nothing that runs (the Deployment's generation, the active copy, the credentials,
// the connection Secret) while a poll and a function call pass; a good renewal then rolls the
// pods to it.
func TestProviderRefusedCertificate(t *testing.T) {
	requireRemoteSecuredComposition(t)
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	c := newSecuredRemote(t, "remote-renewed", a)
	ns, name, host, ca, creds := c.ns, c.name, c.host, c.ca, c.creds

	before := remoteDeployment(t, a, ns, name)
	active := data(getOn(t, a.Kube, secretGVK, ns, name+render.TLSSecretSuffix))
	wrong, err := ca.Issue(pki.Request{CommonName: "cache.elsewhere.example.com", DNSNames: []string{"cache.elsewhere.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	writeTLSPairOn(t, a.Kube, ns, name+"-tls", wrong, ca.CertPEM)
	wantDetail := "tls.crt's certificate names cache.elsewhere.example.com, not " + host
	waitInstance(t, ns, name, "InvalidSpec naming spec.forProvider.tls.secretName", func(i instance) error {
		if err := refused("spec.forProvider.tls.secretName", wantDetail)(i); err != nil {
			return err
		}
		return unavailable("InvalidSpec", "spec.forProvider.tls.secretName")(i)
	})
	m := waitMemcached(t, claimGVK, ns, name, "InvalidSpec naming the TLS Secret", func(m memcached) error {
		if m.Available != "False" || m.AvailableReason != "InvalidSpec" || !strings.Contains(m.Message, "tls.secretName") || !strings.Contains(m.Message, wantDetail) {
			return errors.Errorf("want Available=False/InvalidSpec naming tls.secretName and saying %q", wantDetail)
		}
		return nil
	})
	t.Logf("the claim says: %s", m.Message)
	// Long enough for a poll and a function call to have changed something, were they to.
	time.Sleep(25 * time.Second)
	now := remoteDeployment(t, a, ns, name)
	if now.UID != before.UID || now.Generation != before.Generation {
		t.Errorf("the remote Deployment changed under a refused certificate: UID %s generation %d, was %s and %d", now.UID, now.Generation, before.UID, before.Generation)
	}
	if !maps.Equal(data(getOn(t, a.Kube, secretGVK, ns, name+render.TLSSecretSuffix)), active) {
		t.Error("the TLS copy the pods mount changed under a refused certificate")
	}
	if got := data(getOn(t, a.Kube, secretGVK, ns, name+render.AuthSecretSuffix))["password"]; got != creds.password {
		t.Error("the remote credentials changed under an invalid spec")
	}
	if cd := connectionDetails(t, ns, name+"-memcached"); cd["password"] != creds.password || cd["ca.crt"] != string(ca.CertPEM) {
		t.Error("the claim's connection Secret lost its credentials or CA under an invalid spec")
	}

	// cert-manager renews it right: the pods roll to the new pair.
	digest := before.Spec.Template.Annotations[render.AnnotationCertificate]
	writeTLSSecretOn(t, a.Kube, ca, ns, name+"-tls", name)
	waitAvailable(t, claimGVK, ns, name, 2)
	waitOn(t, a.Kube, deploymentGVK, ns, name, "the pods roll to the renewed pair", func(u *unstructured.Unstructured) error {
		got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", render.AnnotationCertificate)
		if got == digest || got == "" {
			return errors.Errorf("%s is still %q", render.AnnotationCertificate, got)
		}
		return nil
	})
	if got := data(getOn(t, a.Kube, secretGVK, ns, name+render.TLSSecretSuffix))[corev1.TLSCertKey]; got != data(getOn(t, a.Kube, secretGVK, ns, name+"-tls"))[corev1.TLSCertKey] {
		t.Error("the TLS copy does not hold the renewed certificate")
	}

	if err := env.Kube.Delete(ctx, claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gcTimeout, claimGVK, ns, name)
	waitGoneOn(t, a.Kube, gcTimeout, deploymentGVK, ns, name)
	for _, n := range []string{name + render.AuthSecretSuffix, name + render.TLSSecretSuffix} {
		waitGoneOn(t, a.Kube, gcTimeout, secretGVK, ns, n)
	}
}

// waitRemoteCredentials waits until the auth Secret of the Memcached name in the workload
// cluster c is inst's and holds credentials (user memcached, a 32-character password other
// than old, the auth file of both), and returns them.
func waitRemoteCredentials(t *testing.T, c *workloadCluster, ns, name string, inst *unstructured.Unstructured, old string) credentials {
	t.Helper()
	var got credentials
	err := kube.Wait(context.Background(), defaultTimeout, "the credentials of "+ns+"/"+name+" in "+c.Config, func(ctx context.Context) error {
		as, err := c.Kube.Typed.CoreV1().Secrets(ns).Get(ctx, name+render.AuthSecretSuffix, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if as.Labels[labelInstanceUID] != string(inst.GetUID()) {
			return errors.Errorf("the auth Secret is labelled %v, not as Instance %s's", as.Labels, inst.GetName())
		}
		got = credentials{string(as.Data["username"]), string(as.Data["password"])}
		switch {
		case got.username != resolve.Username || len(got.password) != resolve.PasswordLength:
			return errors.Errorf("the auth Secret holds username %q and a password of %d characters", got.username, len(got.password))
		case got.password == old:
			return errors.New("the auth Secret still holds the old password")
		case string(as.Data[render.AuthFileKey]) != got.username+":"+got.password+"\n":
			return errors.New("the auth Secret's auth-file does not hold its username and password")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// waitPublished waits until the connection Secret ns/secret holds every key of want, as it
// is; a password differing is not shown.
func waitPublished(t *testing.T, ns, secret string, want map[string]string) {
	t.Helper()
	waitConnection(t, ns, secret, func(cd map[string]string) error {
		var wrong []string
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if cd[k] != want[k] {
				wrong = append(wrong, k+"="+strconv.Quote(redact(k, cd[k]))+" (want "+strconv.Quote(redact(k, want[k]))+")")
			}
		}
		if len(wrong) > 0 {
			return errors.Errorf("%s", strings.Join(wrong, ", "))
		}
		return nil
	})
}

// remoteDeployment is the Deployment of the Memcached name in the workload cluster c.
func remoteDeployment(t *testing.T, c *workloadCluster, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := c.Kube.Typed.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment %s/%s in %s: %v", ns, name, c.Config, err)
	}
	return d
}

// secretVolumes lists the Secrets a Deployment's pods mount.
func secretVolumes(d *appsv1.Deployment) []string {
	var out []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			out = append(out, v.Secret.SecretName)
		}
	}
	return out
}

// data is the data of a Secret read unstructured (nil when it is absent), decoded.
func data(u *unstructured.Unstructured) map[string]string {
	if u == nil {
		return nil
	}
	var s corev1.Secret
	if err := kube.FromUnstructured(u, &s); err != nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// verifiable checks the certificate chain certPEM as a TLS client verifying host with the
// roots caPEM would.
func verifiable(certPEM, caPEM, host string) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(caPEM)) {
		return errors.New("ca.crt holds no certificate")
	}
	block, rest := pem.Decode([]byte(certPEM))
	if block == nil {
		return errors.New("tls.crt holds no certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	inter.AppendCertsFromPEM(rest)
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// redact hides a password in a failure message, and shortens a certificate to its size.
func redact(key, value string) string {
	switch {
	case value == "":
		return value
	case key == "password":
		return "<a password of " + strconv.Itoa(len(value)) + " characters>"
	case key == "ca.crt":
		return "<" + strconv.Itoa(len(value)) + " bytes>"
	}
	return value
}
