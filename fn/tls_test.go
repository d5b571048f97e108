package fn

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestTLSExpiresWhileRunning drives one Function through the tls-steady request at three
// times: while its certificate is valid, the Memcached is Available; once the certificate has
// expired (the function remembers accepted Secrets, but no longer than that), the same request
// is InvalidSpec naming the expiry, with the Deployment and the copy of the pair held as they
// run.
func TestTLSExpiresWhileRunning(t *testing.T) {
	req := &fnv1.RunFunctionRequest{}
	readProtoYAML(t, filepath.Join("testdata", "tls-steady", "request.yaml"), req)
	f := New(logging.NewNopLogger())
	for _, tc := range []struct {
		reason string
		now    time.Time
		want   string
	}{
		{reason: "Valid: accepted (and remembered).", now: fixtureTime, want: "Available"},
		{reason: "Still valid a year later.", now: fixtureTime.AddDate(1, 0, 0), want: "Available"},
		{reason: "Expired: refused, though accepted before.", now: time.Date(2126, 12, 1, 0, 0, 1, 0, time.UTC), want: "InvalidSpec"},
	} {
		f.now = func() time.Time { return tc.now }
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatal(err)
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
