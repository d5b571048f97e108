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

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// hostile is a target cluster's server as a tenant may run it: it answers lists of
// Deployments with items (and every other list empty), sends events on every Deployment
// watch, and lets every GET of one object wait until the client gives up. It counts the
// Deployment lists and the GETs.
type hostile struct {
	items  int
	item   func(i int) string
	events func(w http.ResponseWriter)
	stall  bool
	// pages, when set, has every list of Deployments say there is another page.
	pages bool
	// status, when set, is the status code of every list of Deployments; list, when set,
	// its whole body.
	status int
	list   func() string

	lists, gets atomic.Int32
}

func (h *hostile) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := "application/json"
		if h.items < 0 {
			ct = "application/vnd.kubernetes.protobuf"
		}
		_, verb := describe(r)
		w.Header().Set("Content-Type", ct)
		deployments := strings.HasSuffix(r.URL.Path, "/deployments")
		switch {
		case r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if deployments && h.events != nil {
				h.events(w)
			}
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		case verb == "GET" && h.stall:
			h.gets.Add(1)
			<-r.Context().Done()
		case verb == "GET":
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		case deployments && h.list != nil:
			h.lists.Add(1)
			if h.status != 0 {
				w.WriteHeader(h.status)
			}
			_, _ = fmt.Fprint(w, h.list())
		case deployments:
			h.lists.Add(1)
			if h.status != 0 {
				w.WriteHeader(h.status)
			}
			var b strings.Builder
			next := ""
			if h.pages {
				next = `,"continue":"more"`
			}
			b.WriteString(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"1"` + next + `},"items":[`)
			for i := range max(h.items, 0) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(h.item(i))
			}
			b.WriteString("]}")
			_, _ = fmt.Fprint(w, b.String())
		default:
			_, _ = fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func tiny(i int) string { return fmt.Sprintf(`{"metadata":{"name":"d%d"}}`, i) }

func padded(i int) string {
	return fmt.Sprintf(`{"metadata":{"name":"d%d","annotations":{"pad":%q}}}`, i, strings.Repeat("a", 6000))
}

// TestTargetLimits proves that what a target cluster answers cannot make the provider hold
// more than its limits: a list of more objects than --max-target-objects, or one whose
// estimate is more than a namespaced ProviderConfig's or its tenant's memory, is refused
// before it is decoded, the namespace is not watched (nor listed again) until the watch
// timeout has passed, and its Instances read an error naming the limit.
func TestTargetLimits(t *testing.T) {
	a := types.NamespacedName{Namespace: "team-h", Name: "sessions"}
	limits := Limits{Objects: 100, ConfigMemory: 1 << 20, TenantMemory: 2 << 20, Namespaces: 2}
	cases := map[string]struct {
		reason string
		server *hostile
		key    Key
		want   string
	}{
		"AmplifiedList": {
			reason: "Just under 8 MiB of tiny Deployments is 250,000 objects, 330 MiB once decoded: more than the objects of one resource in one namespace the provider holds.",
			server: &hostile{items: 250000, item: tiny},
			key:    Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want:   "more than the provider's limit of 100 objects of one resource in one namespace (--max-target-objects=100)",
		},
		"ConfigMemory": {
			reason: "Fewer objects than the bound, but more than a namespaced ProviderConfig's connections may hold.",
			server: &hostile{items: 99, item: padded},
			key:    Key{Kind: "ProviderConfig", Namespace: "team-h", Name: "hostile"},
			want:   "ProviderConfig team-h/hostile's target clusters would exceed 1 MiB (estimated from what their answers decode to), the provider's limit (--max-target-memory-mb=1)",
		},
		"PagedList": {
			reason: "A list answered in pages, each within the bound, is held whole once client-go has read every page: the pages add up.",
			server: &hostile{items: 90, item: tiny, pages: true},
			key:    Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want:   "would have the provider hold 180 deployments of namespace team-h, more than the provider's limit of 100 objects",
		},
		"NonOKSuccess": {
			reason: "client-go decodes a list answered 203 as it does one answered 200: it is counted alike.",
			server: &hostile{items: 250000, item: tiny, status: http.StatusNonAuthoritativeInfo},
			key:    Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want:   "(--max-target-objects=100)",
		},
		"EmptyStructs": {
			reason: "One Deployment with a million empty containers is 3 MiB of JSON and 430 MiB of structs: the estimate counts what the JSON decodes to, not what it weighs.",
			server: &hostile{items: 1, item: func(int) string {
				return `{"metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[` + strings.Repeat("{},", 1<<20) + `{}]}}}}`
			}},
			key:  Key{Kind: "ProviderConfig", Namespace: "team-h", Name: "hostile"},
			want: "(--max-target-memory-mb=1)",
		},
		"DuplicateItems": {
			reason: "client-go decodes every items array of a list, though only the last counts: all of them are counted.",
			server: &hostile{list: func() string {
				return `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"1"},"items":[` + strings.Repeat("{},", 1<<18) + `{}],"items":[]}`
			}},
			key:  Key{Kind: "ProviderConfig", Namespace: "team-h", Name: "hostile"},
			want: "more than the provider's limit of 100 objects",
		},
		"EmptyPages": {
			reason: "A server answering empty pages that say more follow would keep the pager asking, five times a second, for ever.",
			server: &hostile{items: 0, item: tiny, pages: true},
			key:    Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want:   "an empty page that says more follow",
		},
		"DeleteThenAdd": {
			reason: "A watch that deletes an object the store does not hold and adds it back at once cannot make the count lag behind the store.",
			server: &hostile{item: tiny, events: func(w http.ResponseWriter) {
				for i := range 300 {
					for _, t := range []string{"DELETED", "ADDED"} {
						_, _ = fmt.Fprintf(w, `{"type":%q,"object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"w%d","namespace":"team-h","resourceVersion":"%d"}}}`+"\n", t, i, i+2)
					}
				}
				w.(http.Flusher).Flush()
			}},
			key:  Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want: "(--max-target-objects=100)",
		},
		"WatchedObjects": {
			reason: "Objects a watch adds after an empty list count as much as a list's.",
			server: &hostile{item: tiny, events: func(w http.ResponseWriter) {
				for i := range 1000 {
					_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"w%d","namespace":"team-h","resourceVersion":"%d"}}}`+"\n", i, i+2)
				}
				w.(http.Flusher).Flush()
			}},
			key:  Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want: "(--max-target-objects=100)",
		},
		"NotJSON": {
			reason: "A list in protobuf cannot be counted before it is decoded: it is refused.",
			server: &hostile{items: -1},
			key:    Key{Kind: "ClusterProviderConfig", Name: "platform"},
			want:   "not JSON, which is all the provider asks for",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := tc.server.serve(t)
			cs := NewClusters(Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Limits: limits})
			c, err := cs.Get(tc.key, "v1", types.NamespacedName{}, func() (*rest.Config, error) {
				return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop()
			// A list is refused at once; objects a watch adds, once it has sent them.
			_, err = c.Watched(context.Background(), "team-h", a, "")
			for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				_, err = c.Watched(context.Background(), "team-h", a, "")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("\n%s\nWatched(...) = %v, want an error saying %q", tc.reason, err, tc.want)
			}
			lists := tc.server.lists.Load()
			time.Sleep(2 * time.Second)
			if _, err := c.Watched(context.Background(), "team-h", a, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("\n%s\na second Watched(...) = %v, want the same error", tc.reason, err)
			}
			// One list may have been on its way as the namespace was dropped.
			if again := tc.server.lists.Load() - lists; again > 1 {
				t.Errorf("\n%s\nthe dropped namespace was listed %d more times within 2 s; want none until the watch timeout", tc.reason, again)
			}
			c.mu.Lock()
			held := int64(0)
			for _, n := range c.namespaces {
				for _, as := range []*accounts{n.owned, n.tlsOwned} {
					for _, acc := range as.m {
						held += acc.charged
					}
				}
			}
			c.mu.Unlock()
			if held != 0 || c.opts.conn.ledger.holds() != 0 {
				t.Errorf("\n%s\nthe dropped namespace still holds %d bytes, its ledger %d; want both given back", tc.reason, held, c.opts.conn.ledger.holds())
			}
		})
	}
}

// TestTenantMemory proves that a tenant cannot multiply its memory by writing more
// namespaced ProviderConfigs: their connections share one ledger.
func TestTenantMemory(t *testing.T) {
	srv := (&hostile{items: 60, item: padded}).serve(t)
	cs := NewClusters(Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Limits: Limits{Objects: 1000, ConfigMemory: 1 << 20, TenantMemory: 1 << 20}})
	config := func() (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	}
	var errs []error
	for _, name := range []string{"one", "two"} {
		c, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: "team-h", Name: name}, "v1", types.NamespacedName{}, config)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		_, err = c.Watched(context.Background(), "team-h", types.NamespacedName{Namespace: "team-h", Name: name}, "")
		errs = append(errs, err)
	}
	if errs[0] != nil {
		t.Errorf("the first ProviderConfig's namespace: Watched(...) = %v, want it within both budgets", errs[0])
	}
	want := "the ProviderConfigs of namespace team-h's target clusters would exceed 1 MiB (estimated from what their answers decode to), the provider's limit (--max-tenant-memory-mb=1)"
	if errs[1] == nil || !strings.Contains(errs[1].Error(), want) {
		t.Errorf("the second ProviderConfig of the same tenant: Watched(...) = %v, want an error saying %q", errs[1], want)
	}
}

// TestTargetNamespaces proves that the namespaced ProviderConfigs of one namespace watch at
// most --max-target-namespaces namespaces together, however many ProviderConfigs the tenant
// writes: each namespace costs six caches and their watches.
func TestTargetNamespaces(t *testing.T) {
	srv := (&hostile{item: tiny}).serve(t)
	cs := NewClusters(Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Limits: Limits{Objects: 10, Namespaces: 2}})
	var conns []*Cluster
	for _, name := range []string{"one", "two"} {
		c, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: "team-h", Name: name}, "v1", types.NamespacedName{}, func() (*rest.Config, error) {
			return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		conns = append(conns, c)
	}
	for i, ns := range []string{"a", "b", "c"} {
		c := conns[min(i, 1)]
		_, err := c.Watched(context.Background(), ns, types.NamespacedName{Namespace: "team-h", Name: ns}, "")
		switch {
		case i < 2 && err != nil:
			t.Errorf("Watched(%s) = %v, want the namespace watched", ns, err)
		case i == 2 && (err == nil || !strings.Contains(err.Error(), "the ProviderConfigs of namespace team-h already watch 2 target namespaces, the provider's limit (--max-target-namespaces=2)")):
			t.Errorf("Watched(%s) = %v, want the third namespace refused naming the limit", ns, err)
		}
	}
}

// TestWatchChurnIsNotRefused proves that a cluster whose objects change often is not taken for
// one that holds too much: a change replaces what its object held.
func TestWatchChurnIsNotRefused(t *testing.T) {
	pad := strings.Repeat("a", 900)
	srv := (&hostile{item: tiny, events: func(w http.ResponseWriter) {
		for i := range 1000 {
			_, _ = fmt.Fprintf(w, `{"type":"MODIFIED","object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"busy","namespace":"team-a","resourceVersion":"%d","annotations":{"pad":%q}}}}`+"\n", i+2, pad)
		}
		w.(http.Flusher).Flush()
	}}).serve(t)
	cs := NewClusters(Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Limits: Limits{Objects: 100, ConfigMemory: 1 << 20, TenantMemory: 1 << 20}})
	c, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: "team-a", Name: "busy"}, "v1", types.NamespacedName{}, func() (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	a := types.NamespacedName{Namespace: "team-a", Name: "s"}
	if _, err := c.Watched(context.Background(), "team-a", a, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // 1,000 changes of one object, about 1 MiB
	if _, err := c.Watched(context.Background(), "team-a", a, ""); err != nil {
		t.Errorf("after 1,000 changes of one Deployment, Watched(...) = %v; want the namespace still watched", err)
	}
	if held := c.opts.conn.ledger.holds(); held > 64<<10 {
		t.Errorf("the ledger holds %d KiB for one Deployment changed 1,000 times; want what one change holds", held>>10)
	}
}

// TestDirectAnswerBound proves that what a namespaced ProviderConfig's client reads directly
// (a GET of one object, an apply's answer), which no watch holds, is bounded by what it
// decodes to: 8 MiB of empty containers in one Deployment would be 1.3 GiB.
func TestDirectAnswerBound(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","namespace":"team-h"},"spec":{"template":{"spec":{"containers":[`+strings.Repeat("{},", 1<<20)+`{}]}}}}`)
	}))
	t.Cleanup(srv.Close)
	cs := NewClusters(Options{Kinds: testKinds, RequestTimeout: 5 * time.Second, Limits: Limits{ConfigMemory: 16 << 20, TenantMemory: 32 << 20}})
	c, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: "team-h", Name: "hostile"}, "v1", types.NamespacedName{}, func() (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	err = c.Client().Get(context.Background(), types.NamespacedName{Namespace: "team-h", Name: "d"}, &appsv1.Deployment{})
	if want := "more than the provider reads of one answer for a namespaced ProviderConfig (8 MiB, half of --max-target-memory-mb)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Get(...) = %v, want an error saying %q", err, want)
	}
}

// TestQuietTarget proves that a target cluster that lets a request run to the timeout is
// sent nothing for a while: each request would otherwise hold one of the provider's workers
// for the whole timeout.
func TestQuietTarget(t *testing.T) {
	h := &hostile{item: tiny, stall: true}
	srv := h.serve(t)
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Kinds: testKinds, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	key := types.NamespacedName{Namespace: "team-h", Name: "sessions"}
	if err := c.Client().Get(context.Background(), key, &appsv1.Deployment{}); err == nil {
		t.Fatal("a GET the server never answers succeeded")
	}
	start := time.Now()
	err = c.Client().Get(context.Background(), key, &appsv1.Deployment{})
	if err == nil || !strings.Contains(err.Error(), "the target cluster did not answer within 300ms") {
		t.Errorf("the next Get(...) = %v, want it refused at once, saying the cluster did not answer", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("the next Get(...) took %v; want it to fail without waiting", took)
	}
	if n := h.gets.Load(); n != 1 {
		t.Errorf("the server was sent %d GETs; want 1: none while it is known not to answer", n)
	}
}

// TestWaker proves that made-up watch events cannot make the provider's shared queue work
// for one tenant without bound: wakes beyond a burst as large as the Instances it wakes for
// wait for the rate, and an Instance woken again while it waits is woken once.
func TestWaker(t *testing.T) {
	w := &woken{}
	k := newWaker(w.wake, 2)
	k.grow(1) // the burst is minWakeBurst
	a := types.NamespacedName{Namespace: "team-h", Name: "a"}
	for range 1000 {
		k.wake([]types.NamespacedName{a})
	}
	var many []types.NamespacedName
	for i := range 100 {
		many = append(many, types.NamespacedName{Namespace: "team-h", Name: fmt.Sprint(i)})
	}
	k.wake(many)
	// While the waker waits for the rate, an Instance woken again is queued once.
	b := types.NamespacedName{Namespace: "team-h", Name: "b"}
	for range 1000 {
		k.wake([]types.NamespacedName{b})
	}
	k.mu.Lock()
	queued := 0
	for _, i := range k.queue {
		if i == b {
			queued++
		}
	}
	k.mu.Unlock()
	if queued != 1 {
		t.Errorf("an Instance woken 1,000 times while the waker waits is queued %d times; want once", queued)
	}
	time.Sleep(time.Second)
	total := 0
	w.mu.Lock()
	for _, n := range w.got {
		total += n
	}
	w.mu.Unlock()
	if most := minWakeBurst + 3; total > most {
		t.Errorf("woke %d times within a second; want at most %d: a burst of %d and 2 a second", total, most, minWakeBurst)
	}
}

// TestRequestsLabel proves that the requests metric names a namespaced ProviderConfig's
// target by no tenant-written value: not its server URL (which may carry credentials, and
// which 5,000 tenants would make 5,000 series of), nor its name.
func TestRequestsLabel(t *testing.T) {
	srv := (&hostile{item: tiny}).serve(t)
	before := testutil.CollectAndCount(Requests)
	cs := NewClusters(Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute})
	for i := range 5 {
		c, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: fmt.Sprintf("team-%d", i), Name: "mine"}, "v1", types.NamespacedName{}, func() (*rest.Config, error) {
			return &rest.Config{Host: srv.URL + fmt.Sprintf("/x%d", i), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		_ = c.Client().Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "b"}, &corev1.Secret{})
	}
	if got := testutil.ToFloat64(Requests.WithLabelValues("ProviderConfig", "GET", "404")); got < 5 {
		t.Errorf("requests labelled config=ProviderConfig = %v, want the 5 GETs", got)
	}
	if added := testutil.CollectAndCount(Requests) - before; added > 1 {
		t.Errorf("5 tenants' ProviderConfigs added %d series; want at most 1", added)
	}
	if got := codeOf(&http.Response{StatusCode: 299}); got != "2xx" {
		t.Errorf("the code label of a 299 = %q, want its class: a server must not add series with codes of its own", got)
	}
	if got := Label(Key{Kind: "ClusterProviderConfig", Name: "platform"}); got != "ClusterProviderConfig/platform" {
		t.Errorf("Label(ClusterProviderConfig platform) = %q, want the platform's config named", got)
	}
}

// TestIdleConnections proves that a connection no Instance has used for Limits.Idle is
// closed, network connections and all, and that one in use is kept.
func TestIdleConnections(t *testing.T) {
	srv := (&hostile{item: tiny}).serve(t)
	cs := NewClusters(Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Limits: Limits{Idle: time.Minute}})
	config := func() (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	}
	used, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: "team-a", Name: "used"}, "v1", types.NamespacedName{}, config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := used.Watched(context.Background(), "team-a", types.NamespacedName{Namespace: "team-a", Name: "s"}, ""); err != nil {
		t.Fatal(err)
	}
	once, err := cs.Get(Key{Kind: "ProviderConfig", Namespace: "team-b", Name: "once"}, "v1", types.NamespacedName{}, config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := once.Watched(context.Background(), "team-b", types.NamespacedName{Namespace: "team-b", Name: "s"}, ""); err != nil {
		t.Fatal(err)
	}
	once.Forget("team-b", types.NamespacedName{Namespace: "team-b", Name: "s"})
	if once.conns.count() == 0 {
		t.Fatal("the connection used once opened no network connection")
	}
	cs.Sweep(time.Now().Add(2 * time.Minute))
	if n := cs.Len(); n != 1 {
		t.Errorf("%d connections left after the sweep; want 1, the one in use", n)
	}
	if n := once.conns.count(); n != 0 {
		t.Errorf("the idle connection keeps %d network connections open; want none", n)
	}
	if used.conns.count() == 0 {
		t.Error("the connection in use lost its network connections")
	}
}

// TestTLSSecretWakesOnlyItsInstances proves that a change of a TLS Secret in a shared target
// namespace wakes the Instances that name it, not every Instance there.
func TestTLSSecretWakesOnlyItsInstances(t *testing.T) {
	var sent atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		tlsWatch := strings.HasSuffix(r.URL.Path, "/secrets") && strings.Contains(r.URL.RawQuery, "fieldSelector") && r.URL.Query().Get("watch") == "true"
		switch {
		case tlsWatch && sent.CompareAndSwap(false, true):
			time.Sleep(300 * time.Millisecond)
			_, _ = fmt.Fprint(w, `{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1","type":"kubernetes.io/tls","metadata":{"name":"cert","namespace":"shared","resourceVersion":"5"}}}`+"\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			_, _ = fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	w := &woken{}
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Kinds: testKinds, SyncTimeout: 5 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Wake: w.wake})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	naming := types.NamespacedName{Namespace: "team-a", Name: "secure"}
	other := types.NamespacedName{Namespace: "team-b", Name: "plain"}
	for _, i := range []struct {
		n   types.NamespacedName
		tls string
	}{{naming, "cert"}, {other, ""}} {
		if _, err := c.Watched(context.Background(), "shared", i.n, i.tls); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for w.count(naming) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if w.count(naming) == 0 {
		t.Fatal("the Instance naming the changed TLS Secret was not woken")
	}
	if n := w.count(other); n != 0 {
		t.Errorf("an Instance naming no TLS Secret was woken %d times by another's TLS Secret", n)
	}
}

var _ = v1alpha1.LabelInstanceUID
