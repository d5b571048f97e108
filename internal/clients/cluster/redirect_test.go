package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// TestRedirect proves that neither a connection's client nor its watches follow a target
// cluster's redirect to a plain-http service, whatever rest.Config they were made from, and
// that what the watches report names the status code, not what the server said.
func TestRedirect(t *testing.T) {
	var requests atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(internal.Close)
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(target.Close)

	redirect := "the server answered 307 Temporary Redirect, a redirect, which the provider never follows from a target cluster"
	c, err := New(&rest.Config{Host: target.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Kinds: testKinds, SyncTimeout: 2 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	type result struct {
		Requests int32
		Err      string
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sessions"}}
	cases := map[string]struct {
		reason string
		call   func() error
		want   result
	}{
		"Get": {
			reason: "The client's GET is not sent on.",
			call: func() error {
				return c.Client().Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "sessions"}, d)
			},
			want: result{Err: redirect},
		},
		"Delete": {
			reason: "The client's DELETE is not sent on.",
			call:   func() error { return c.Client().Delete(context.Background(), d) },
			want:   result{Err: redirect},
		},
		"Watched": {
			reason: "The watches' lists are not sent on, and the namespace cannot be observed, saying why.",
			call: func() error {
				_, err := c.Watched(context.Background(), "team-a", types.NamespacedName{Namespace: "platform", Name: "sessions"}, "")
				return err
			},
			want: result{Err: "cannot observe namespace team-a of " + target.URL + ": " + redirect},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := requests.Load()
			got := result{}
			if err := tc.call(); err != nil {
				got.Err = err.Error()
			}
			got.Requests = requests.Load() - before
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
