package fn

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/crossplane/function-sdk-go/logging"
)

// TestWaitingModeChangeHoldsWhatRuns: a change from the password to client certificates, with
// metrics on and no auth proxy image (client certificates need none), whose new credentials
// wait in a crowded namespace, holds what runs: rendering the password's pods, whose exporter
// needs the auth proxy, would give a container without an image, which the API server refuses.
func TestWaitingModeChangeHoldsWhatRuns(t *testing.T) {
	f := New(logging.NewNopLogger())
	c := newCluster(t, true)
	const before = "{size: 1, auth: {enabled: true}}"
	for range 2 {
		c.reconcile(f, before)
	}
	crowd(t, f, "team-a")
	_, rsp := c.reconcile(f, "{size: 1, auth: {enabled: true, mode: ClientCertificate}, metrics: {enabled: true}}")
	d := rsp.GetDesired().GetResources()[KeyDeployment].GetResource()
	if d == nil {
		t.Fatal("no desired Deployment")
	}
	containers := d.GetFields()["spec"].GetStructValue().GetFields()["template"].GetStructValue().GetFields()["spec"].GetStructValue().GetFields()["containers"].GetListValue().GetValues()
	for _, v := range containers {
		c := v.GetStructValue().GetFields()
		if img, ok := c["image"]; !ok || img.GetStringValue() == "" {
			t.Errorf("container %q of the desired Deployment has no image: the API server refuses the whole Deployment", c["name"].GetStringValue())
		}
	}
}

// TestHeldClientCertificateIsRenewed: a Memcached with client certificates whose spec turns
// invalid (here the platform lowers policy.maxSize below the claim's size) is held as it runs,
// and its client certificate, which memcached never loads, is still renewed before it expires:
// its clients are not refused while it is held.
func TestHeldClientCertificateIsRenewed(t *testing.T) {
	f := New(logging.NewNopLogger())
	now := fixtureTime
	f.now = func() time.Time { return now }
	f.credentials.Now = func() time.Time { return now }
	c := newCluster(t, true)
	const spec = "{size: 3, auth: {enabled: true, mode: ClientCertificate}}"
	for range 2 {
		c.reconcile(f, spec)
	}
	if len(c.connection["tls.crt"]) == 0 {
		t.Fatalf("no client certificate published: %v", c.connection)
	}
	// Day 30: the platform lowers policy.maxSize to 1; the claim (size 3) is InvalidSpec.
	now = now.Add(30 * 24 * time.Hour)
	c.input = yamlStruct(t, `
apiVersion: memcached.fn.example.com/v1beta1
kind: Input
defaults:
  image: memcached:1.6.39-alpine
  memoryLimitMB: 64
policy:
  maxSize: 1
  maxMemoryLimitMB: 1024
  allowedRegistries: [docker.io]
`)
	// Reconciled daily until day 100.
	invalid := false
	for now.Before(fixtureTime.Add(100 * 24 * time.Hour)) {
		now = now.Add(24 * time.Hour)
		_, rsp := c.reconcile(f, spec)
		invalid = hasReason(rsp, "InvalidSpec")
	}
	if !invalid {
		t.Fatal("the claim is not InvalidSpec after the platform lowered policy.maxSize")
	}
	block, _ := pem.Decode(c.connection["tls.crt"])
	if block == nil {
		t.Fatal("no client certificate in the connection details")
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if now.After(crt.NotAfter) {
		t.Errorf("held since day 30, the client certificate every client presents expired on %s (now %s): every client is refused while the Memcached is held", crt.NotAfter, now)
	}
}

// TestCertificateRotationRollsOnce: with the issued server certificate, a new rotation changes
// the CA bundle and the server certificate, which memcached reads from one copy: the replicas
// roll once, when the copy holds both, never first with the old server certificate.
func TestCertificateRotationRollsOnce(t *testing.T) {
	f := New(logging.NewNopLogger())
	f.now = func() time.Time { return fixtureTime }
	c := newCluster(t, true)
	template := func() string {
		d := c.objects[KeyDeployment].GetResource()
		return str(d, "spec", "template", "metadata", "annotations", "cache.example.com/credentials") + "/" +
			str(d, "spec", "template", "metadata", "annotations", "cache.example.com/certificate")
	}
	for range 3 {
		c.reconcile(f, "{size: 3, auth: {enabled: true, mode: ClientCertificate, rotation: r1}}")
	}
	seen := []string{template()}
	for range 4 {
		c.reconcile(f, "{size: 3, auth: {enabled: true, mode: ClientCertificate, rotation: r2}}")
		if tp := template(); tp != seen[len(seen)-1] {
			seen = append(seen, tp)
		}
	}
	if rolls := len(seen) - 1; rolls != 1 {
		t.Errorf("a new rotation changed the pod template %d times (%v): the replicas roll %d times", rolls, seen, rolls)
	}
}
