package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// TestWatchBudget proves that a target cluster cannot grow the provider's cache without end
// by ending each watch stream just within its bound, after which the watch is renewed and
// keeps what it added: once the watches of a resource read their share since they listed (as
// much as the list, at least minWatched), they fail, back off and list again, which replaces
// what they held.
func TestWatchBudget(t *testing.T) {
	const (
		// streams the server sends, each of perStream events of about 1 KiB: 4 MiB in
		// all, four times the share of an empty list.
		streams   = 4
		perStream = 1024
	)
	pad := strings.Repeat("a", 800)
	var served, lists atomic.Int32
	var rv atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		deployments := strings.HasSuffix(r.URL.Path, "/deployments")
		switch {
		case q.Get("sendInitialEvents") == "true":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":400}`)
		case q.Get("watch") == "true" && deployments && served.Add(1) <= streams:
			// perStream Deployments never seen before, then the stream ends as an API
			// server ends one at its timeout.
			for i := 0; i < perStream; i++ {
				v := rv.Add(1) + 100
				_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d%d","namespace":"team-a","resourceVersion":"%d","labels":{%q:"uid"},"annotations":{"pad":%q}}}}`+"\n", v, v, v1alpha1.LabelInstanceUID, pad)
			}
		case q.Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		default:
			if deployments {
				lists.Add(1)
			}
			_, _ = fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Kinds: testKinds, SyncTimeout: 10 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	r, err := c.Watched(context.Background(), "team-a", types.NamespacedName{Namespace: "platform", Name: "sessions"}, "")
	if err != nil {
		t.Fatal(err)
	}
	// The reflector backs off between lists (0.8 s, doubling): the wait only guards against
	// a watch that never renews.
	const wait = 2 * time.Minute
	deadline := time.Now().Add(wait)
	for served.Load() <= streams && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if served.Load() <= streams {
		t.Fatalf("the server served %d of %d streams in %v", served.Load(), streams, wait)
	}
	// What the watches hold once the server has sent all, sampling every 16th Deployment.
	time.Sleep(200 * time.Millisecond)
	held := 0
	for v := int64(101); v <= rv.Load()+100; v += 16 {
		err := r.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: fmt.Sprintf("d%d", v)}, &appsv1.Deployment{})
		if err == nil {
			held += 16
		}
	}
	// The most an informer may hold: what minWatched of these events add, and no more.
	most := minWatched / (len(pad) + 200)
	if held > most {
		t.Errorf("the watches hold about %d Deployments of the %d the server sent; want at most %d, what %d MiB of events add", held, streams*perStream, most, minWatched>>20)
	}
	if lists.Load() < 2 {
		t.Errorf("the watches listed Deployments %d times; want them to list again once they read %d MiB", lists.Load(), minWatched>>20)
	}
	t.Logf("held about %d Deployments; listed %d times", held, lists.Load())
}
