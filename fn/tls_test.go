package fn

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
)

// TestTLSExpiresWhileRunning drives one Function through the tls-steady request at several
// times: while its certificate is valid, the Memcached is Available, and Crossplane is asked
// to call again no later than a second after the certificate expires (SettledTTL at most,
// ChangingTTL at least); once it has expired (the function remembers accepted Secrets, but
// no longer than that), the same request is InvalidSpec naming the expiry, with the
// Deployment and the copy of the pair held as they run.
func TestTLSExpiresWhileRunning(t *testing.T) {
	req := &fnv1.RunFunctionRequest{}
	readProtoYAML(t, filepath.Join("testdata", "tls-steady", "request.yaml"), req)
	f := New(logging.NewNopLogger())
	expiry := time.Date(2126, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		reason string
		now    time.Time
		want   string
		ttl    time.Duration
	}{
		{reason: "Valid: accepted (and remembered).", now: fixtureTime, want: "Available", ttl: SettledTTL},
		{reason: "Still valid a year later.", now: fixtureTime.AddDate(1, 0, 0), want: "Available", ttl: SettledTTL},
		{reason: "Three minutes before it expires: called again a second after.", now: expiry.Add(-3 * time.Minute), want: "Available", ttl: 3*time.Minute + time.Second},
		{reason: "Five seconds before it expires: called again after ChangingTTL, no sooner.", now: expiry.Add(-5 * time.Second), want: "Available", ttl: ChangingTTL},
		{reason: "Expired: refused, though accepted before.", now: expiry.Add(time.Second), want: "InvalidSpec", ttl: SettledTTL},
	} {
		f.now = func() time.Time { return tc.now }
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := rsp.GetMeta().GetTtl().AsDuration(); got != tc.ttl {
			t.Errorf("%s\nat %v: TTL %v, want %v", tc.reason, tc.now, got, tc.ttl)
		}
		var reason, message string
		for _, c := range rsp.GetConditions() {
			if c.GetType() == ConditionAvailable {
				reason, message = c.GetReason(), c.GetMessage()
			}
		}
		if reason != tc.want {
			t.Errorf("%s\nat %v: Available reason %q (%s), want %q", tc.reason, tc.now, reason, message, tc.want)
		}
		if tc.want == "InvalidSpec" {
			if !strings.Contains(message, "spec.tls.secretName") || !strings.Contains(message, "expired at 2126-12-01T00:00:00Z") {
				t.Errorf("%s\nmessage %q: want it to name spec.tls.secretName and the expiry", tc.reason, message)
			}
			for _, k := range []string{KeyDeployment, KeyTLSSecret} {
				if _, ok := rsp.GetDesired().GetResources()[k]; !ok {
					t.Errorf("%s\n%s is not held", tc.reason, k)
				}
			}
		}
	}
}

// TestTLSVerdictsBounded: the function remembers an accepted TLS Secret of ordinary size, and
// accepts but does not remember one padded past maxRememberedTLSBytes (its ca.crt the same CA
// many times over), nor the rendering that carries it (maxCachedRenderBytes), so that no
// tenant can make the shared function hold its Secrets' bytes a thousand times over by
// rewriting one.
func TestTLSVerdictsBounded(t *testing.T) {
	for _, tc := range []struct {
		reason   string
		copies   int
		remember int
		renders  int
	}{
		{reason: "An ordinary pair is remembered, and so is the rendering that serves it.", copies: 1, remember: 1, renders: 1},
		{reason: "A padded pair is accepted and checked again on every call, and its rendering, which carries the padding, is made again.", copies: 200, remember: 0, renders: 0},
	} {
		req := &fnv1.RunFunctionRequest{}
		readProtoYAML(t, filepath.Join("testdata", "tls-steady", "request.yaml"), req)
		data := req.GetRequiredResources()["memcached-tls-secret"].GetItems()[0].GetResource().GetFields()["data"].GetStructValue().GetFields()
		ca, err := base64.StdEncoding.DecodeString(data[corev1.ServiceAccountRootCAKey].GetStringValue())
		if err != nil {
			t.Fatal(err)
		}
		data[corev1.ServiceAccountRootCAKey] = structpb.NewStringValue(base64.StdEncoding.EncodeToString(bytes.Repeat(ca, tc.copies)))

		f := New(logging.NewNopLogger())
		f.now = func() time.Time { return fixtureTime }
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rsp.GetConditions() {
			if c.GetType() == ConditionAvailable && c.GetReason() != "Available" {
				t.Errorf("%s\nAvailable reason %q (%s), want Available", tc.reason, c.GetReason(), c.GetMessage())
			}
		}
		if got := f.tlsVerdicts.Len(); got != tc.remember {
			t.Errorf("%s\nremembered verdicts: got %d, want %d", tc.reason, got, tc.remember)
		}
		if got := f.renders.Len(); got != tc.renders {
			t.Errorf("%s\nremembered renderings: got %d, want %d", tc.reason, got, tc.renders)
		}
	}
}
