package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/example/function-memcached/internal/clients/kubeconfig"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

func request(t *testing.T, method, url string) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(context.Background(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDescribe(t *testing.T) {
	const api = "https://target:6443"
	cases := map[string]struct {
		reason         string
		method, url    string
		resource, verb string
	}{
		"Get":    {reason: "A read of one object is a GET.", method: "GET", url: api + "/apis/apps/v1/namespaces/team-a/deployments/sessions", resource: "deployments", verb: "GET"},
		"List":   {reason: "A read of a collection is a LIST.", method: "GET", url: api + "/api/v1/namespaces/team-a/services?labelSelector=x", resource: "services", verb: "LIST"},
		"Watch":  {reason: "A watch is a WATCH, not a read.", method: "GET", url: api + "/apis/policy/v1/namespaces/team-a/poddisruptionbudgets?watch=true", resource: "poddisruptionbudgets", verb: "WATCH"},
		"Apply":  {reason: "Server-side apply is a PATCH.", method: "PATCH", url: api + "/apis/apps/v1/namespaces/team-a/deployments/sessions?fieldManager=m", resource: "deployments", verb: "PATCH"},
		"Delete": {reason: "A delete is a DELETE.", method: "DELETE", url: api + "/api/v1/namespaces/team-a/services/sessions", resource: "services", verb: "DELETE"},
		"Other":  {reason: "A request outside namespaced resources names none.", method: "GET", url: api + "/version", verb: "GET"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource, verb := describe(request(t, tc.method, tc.url))
			if diff := cmp.Diff([]string{tc.resource, tc.verb}, []string{resource, verb}); diff != "" {
				t.Errorf("\n%s\ndescribe(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// protobufStatus encodes a failure Status with message as an API server does in protobuf.
func protobufStatus(t *testing.T, message string) string {
	t.Helper()
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Message: message, Code: 403}
	var b bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).Encode(st, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// answer is an HTTP answer, or a transport error when err is set.
type answer struct {
	resource string
	code     int
	body     string
	err      error
	canceled bool
}

func TestHealth(t *testing.T) {
	forbidden := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"deployments.apps is forbidden: User \"memcached\" cannot watch resource \"deployments\"","reason":"Forbidden","code":403}`
	cases := map[string]struct {
		reason  string
		answers []answer
		want    string
		changes int
	}{
		"Healthy": {
			reason:  "Requests that succeed keep the namespace healthy, and nobody is woken.",
			answers: []answer{{resource: "deployments", code: 200}, {resource: "services", code: 200}},
		},
		"Forbidden": {
			reason:  "A refused watch makes the namespace unhealthy with the API server's own message, waking its Instances once however often it is retried.",
			answers: []answer{{resource: "deployments", code: 200}, {resource: "deployments", code: 403, body: forbidden}, {resource: "deployments", code: 403, body: forbidden}},
			want:    `deployments.apps is forbidden: User "memcached" cannot watch resource "deployments"`,
			changes: 1,
		},
		"ForbiddenProtobuf": {
			reason:  "API servers answer clients of built-in kinds in protobuf; the message is read from that too.",
			answers: []answer{{resource: "deployments", code: 403, body: protobufStatus(t, "deployments.apps is forbidden: User \"memcached\" cannot list resource \"deployments\"")}},
			want:    `deployments.apps is forbidden: User "memcached" cannot list resource "deployments"`,
			changes: 1,
		},
		"Unauthorized": {
			reason:  "Revoked credentials without a Status body still say what the server answered.",
			answers: []answer{{resource: "services", code: 401}},
			want:    "the server answered 401 Unauthorized",
			changes: 1,
		},
		"Unreachable": {
			reason:  "A cluster that cannot be reached is unhealthy, naming the host.",
			answers: []answer{{resource: "services", err: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")}},
			want:    "cannot reach target:6443: dial tcp 10.0.0.1:6443: connect: connection refused",
			changes: 1,
		},
		"Recovered": {
			reason:  "The cluster coming back makes the namespace healthy again, waking its Instances again.",
			answers: []answer{{resource: "services", err: errors.New("connection refused")}, {resource: "services", code: 200}},
			changes: 2,
		},
		"OneResourceStillFailing": {
			reason:  "The namespace is healthy only when the latest request for every resource succeeded.",
			answers: []answer{{resource: "deployments", code: 503}, {resource: "services", code: 503}, {resource: "deployments", code: 200}},
			want:    "the server answered 503 Service Unavailable",
			changes: 1,
		},
		"Cancelled": {
			reason:  "A request the provider cancelled (a watch it stopped) says nothing about the cluster.",
			answers: []answer{{resource: "deployments", err: context.Canceled, canceled: true}},
		},
		"RequestErrors": {
			reason:  "Answers about the request itself (not found, conflict, too many requests) say nothing about the cluster.",
			answers: []answer{{resource: "deployments", code: 404}, {resource: "deployments", code: 409}, {resource: "deployments", code: 429}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changes := 0
			h := newHealth(func() { changes++ })
			for _, a := range tc.answers {
				ctx, cancel := context.WithCancel(context.Background())
				if a.canceled {
					cancel()
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", "https://target:6443/apis/apps/v1/namespaces/team-a/"+a.resource+"?watch=true", nil)
				var rsp *http.Response
				if a.err == nil {
					rsp = &http.Response{StatusCode: a.code, Status: fmt.Sprintf("%d %s", a.code, http.StatusText(a.code)), Body: io.NopCloser(strings.NewReader(a.body))}
				}
				h.record(req, a.resource, rsp, a.err)
				if rsp != nil {
					if b, _ := io.ReadAll(rsp.Body); string(b) != a.body {
						t.Errorf("\n%s\nthe response body was not left for the client: got %q", tc.reason, b)
					}
				}
				cancel()
			}
			got := ""
			if err := h.err(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nerr(): -want, +got:\n%s", tc.reason, diff)
			}
			if changes != tc.changes {
				t.Errorf("\n%s\nchanged %d times, want %d", tc.reason, changes, tc.changes)
			}
		})
	}
}

// watcher records the options of each watch it is asked for.
type watcher struct {
	toolscache.ListerWatcher
	got []metav1.ListOptions
}

func (w *watcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	w.got = append(w.got, o)
	return watch.NewEmptyWatch(), nil
}

func TestRenewedWatches(t *testing.T) {
	long := int64(600)
	short := int64(10)
	cases := map[string]struct {
		reason   string
		timeout  time.Duration
		asked    *int64
		min, max int64
	}{
		"Capped":      {reason: "A watch the informer would keep for ten minutes is renewed after about one.", timeout: time.Minute, asked: &long, min: 60, max: 72},
		"NoTimeout":   {reason: "A watch without a timeout gets one.", timeout: time.Minute, min: 60, max: 72},
		"ShorterKept": {reason: "A shorter timeout the informer asked for is kept.", timeout: time.Minute, asked: &short, min: 10, max: 10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &watcher{}
			for range 20 {
				if _, err := (&renewedWatches{ListerWatcher: w, timeout: tc.timeout}).Watch(metav1.ListOptions{TimeoutSeconds: tc.asked}); err != nil {
					t.Fatal(err)
				}
			}
			for _, o := range w.got {
				if o.TimeoutSeconds == nil || *o.TimeoutSeconds < tc.min || *o.TimeoutSeconds > tc.max {
					t.Errorf("\n%s\nwatch timeout %v, want between %d and %d seconds", tc.reason, o.TimeoutSeconds, tc.min, tc.max)
				}
			}
		})
	}
}

func TestOwner(t *testing.T) {
	annotated := func(v string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationInstance: v}}}
	}
	cases := map[string]struct {
		reason string
		o      any
		want   []types.NamespacedName
	}{
		"Annotated":   {reason: "An object names its Instance in an annotation.", o: annotated("team-a/sessions"), want: []types.NamespacedName{{Namespace: "team-a", Name: "sessions"}}},
		"Tombstone":   {reason: "A deletion the informer missed still names its Instance.", o: toolscache.DeletedFinalStateUnknown{Obj: annotated("team-a/sessions")}, want: []types.NamespacedName{{Namespace: "team-a", Name: "sessions"}}},
		"NoNamespace": {reason: "A malformed annotation wakes nobody.", o: annotated("sessions")},
		"None":        {reason: "An object without the annotation wakes nobody.", o: &appsv1.Deployment{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, owner(tc.o)); diff != "" {
				t.Errorf("\n%s\nowner(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// woken collects the Instances a Cluster wakes.
type woken struct {
	mu  sync.Mutex
	got map[types.NamespacedName]int
}

func (w *woken) wake(n types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.got == nil {
		w.got = map[types.NamespacedName]int{}
	}
	w.got[n]++
}

func (w *woken) count(n types.NamespacedName) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got[n]
}

// using registers instances with c as if they had read namespace ns.
func using(c *Cluster, ns string, instances ...types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := &watches{instances: map[types.NamespacedName]string{}, stop: func() {}}
	for _, i := range instances {
		n.instances[i] = ""
	}
	c.namespaces[ns] = n
}

func TestClusters(t *testing.T) {
	a := types.NamespacedName{Namespace: "team-a", Name: "sessions"}
	b := types.NamespacedName{Namespace: "team-b", Name: "carts"}
	secret := types.NamespacedName{Namespace: "crossplane-system", Name: "workload"}
	key := Key{Kind: "ClusterProviderConfig", Name: "workload"}
	config := func(host string) func() (*rest.Config, error) {
		return func() (*rest.Config, error) { return &rest.Config{Host: host}, nil }
	}

	w := &woken{}
	cs := NewClusters(Options{Wake: w.wake})
	first, err := cs.Get(key, "v1", secret, config("https://one"))
	if err != nil {
		t.Fatal(err)
	}
	using(first, "team-a", a)

	t.Run("SameVersionSameConnection", func(t *testing.T) {
		got, err := cs.Get(key, "v1", secret, func() (*rest.Config, error) { return nil, errors.New("the Secret must not be read again") })
		if err != nil || got != first {
			t.Errorf("Get(...) with unchanged credentials = %p, %v; want the same connection %p, nil", got, err, first)
		}
	})
	t.Run("SecretChangedWakes", func(t *testing.T) {
		cs.SecretChanged(secret)
		cs.SecretChanged(types.NamespacedName{Namespace: "crossplane-system", Name: "other"})
		if got := w.count(a); got != 1 {
			t.Errorf("the Instance using the changed Secret was woken %d times, want 1", got)
		}
	})
	t.Run("NewVersionNewConnection", func(t *testing.T) {
		second, err := cs.Get(key, "v2", secret, config("https://two"))
		if err != nil || second == first || second.Host != "https://two" {
			t.Fatalf("Get(...) with rotated credentials = %v, %v; want a new connection to https://two", second, err)
		}
		if first.ctx.Err() == nil {
			t.Error("the connection with the old credentials still runs")
		}
		if got := w.count(a); got != 2 {
			t.Errorf("the Instance of the replaced connection was woken %d times in all, want 2", got)
		}
		using(second, "team-b", b)
	})
	t.Run("DropWakes", func(t *testing.T) {
		cs.Drop(key)
		if got := w.count(b); got != 1 {
			t.Errorf("the Instance of the dropped connection was woken %d times, want 1", got)
		}
		if _, err := cs.Get(key, "v2", secret, func() (*rest.Config, error) { return nil, errors.New("gone") }); err == nil || err.Error() != "gone" {
			t.Errorf("Get(...) after Drop: %v; want the credentials to be read again", err)
		}
	})
}

// apiServer serves lists and watches of Deployments, Services and PodDisruptionBudgets in
// one namespace, answering every request with code (and a Kubernetes Status) unless it is
// 200, and listing deployments.
func apiServer(t *testing.T, code int, deployments ...appsv1.Deployment) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if code != http.StatusOK {
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Message: "deployments.apps is forbidden: User \"memcached\" cannot list resource \"deployments\""})
			return
		}
		q := r.URL.Query()
		switch {
		case q.Get("sendInitialEvents") == "true":
			// Not a server that streams initial lists: the informer lists instead.
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: 400})
		case q.Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		default:
			list := map[string]any{"metadata": map[string]any{"resourceVersion": "10"}, "items": []any{}}
			if strings.HasSuffix(r.URL.Path, "/deployments") {
				list["kind"], list["apiVersion"], list["items"] = "DeploymentList", "apps/v1", deployments
			}
			_ = json.NewEncoder(w).Encode(list)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWatched(t *testing.T) {
	a := types.NamespacedName{Namespace: "platform", Name: "sessions"}
	owned := appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sessions", ResourceVersion: "9",
			Labels:      map[string]string{v1alpha1.LabelInstanceUID: "uid-1"},
			Annotations: map[string]string{v1alpha1.AnnotationInstance: "platform/sessions"}},
	}
	t.Run("Observable", func(t *testing.T) {
		w := &woken{}
		c := serving(t, w, owned)
		r, err := c.Watched(context.Background(), "team-a", a, "")
		if err != nil {
			t.Fatalf("Watched(...): %v", err)
		}
		d := &appsv1.Deployment{}
		if err := r.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "sessions"}, d); err != nil {
			t.Errorf("Get(...) from the watches: %v", err)
		}
		if w.count(a) == 0 {
			t.Error("the Instance whose Deployment the watches listed was not woken")
		}
		if diff := cmp.Diff([]types.NamespacedName{a}, c.Instances()); diff != "" {
			t.Errorf("Instances(): -want, +got:\n%s", diff)
		}
		c.Forget("team-a", a)
		if got := c.Instances(); len(got) != 0 {
			t.Errorf("Instances() after Forget(...) = %v, want none", got)
		}
	})
	t.Run("NamedByAnotherTenant", func(t *testing.T) {
		// In a shared target namespace a tenant can label and annotate objects of its own
		// to name another team's Instance: that Instance is woken only if it reads the
		// namespace, so churning them cannot keep it, and the queue, busy.
		w := &woken{}
		c := serving(t, w, owned)
		reader := types.NamespacedName{Namespace: "team-b", Name: "carts"}
		if _, err := c.Watched(context.Background(), "team-a", reader, ""); err != nil {
			t.Fatalf("Watched(...): %v", err)
		}
		if n := w.count(a); n != 0 {
			t.Errorf("Instance %s, which does not read namespace team-a, was woken %d times by an object there naming it", a, n)
		}
	})
	t.Run("Forbidden", func(t *testing.T) {
		srv := apiServer(t, http.StatusForbidden)
		c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Kinds: testKinds, SyncTimeout: 2 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		_, err = c.Watched(context.Background(), "team-a", a, "")
		want := "cannot observe namespace team-a of " + srv.URL + `: deployments.apps is forbidden: User "memcached" cannot list resource "deployments"`
		if err == nil || err.Error() != want {
			t.Errorf("Watched(...) = %v, want %q", err, want)
		}
		start := time.Now()
		if _, err := c.Watched(context.Background(), "team-a", a, ""); err == nil || time.Since(start) > 100*time.Millisecond {
			t.Errorf("a second Watched(...) took %v and returned %v: want the same failure at once", time.Since(start), err)
		}
	})
}

// serving is a Cluster of an API server that serves objs, waking Instances through w.
func serving(t *testing.T, w *woken, objs ...appsv1.Deployment) *Cluster {
	t.Helper()
	srv := apiServer(t, http.StatusOK, objs...)
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Options{Kinds: testKinds, SyncTimeout: 10 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute, Wake: w.wake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// testKinds are the kinds the provider watches, as the Instance controller lists them.
var testKinds = []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{}, &corev1.Secret{}}

func TestReaderFallsBackToTLSSecrets(t *testing.T) {
	ctx := context.Background()
	s := kubeconfig.Scheme()
	tlsSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sessions-cert"}, Type: corev1.SecretTypeTLS}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sessions-cert"}}
	r := reader{
		owned: fake.NewClientBuilder().WithScheme(s).Build(),
		tls:   fake.NewClientBuilder().WithScheme(s).WithObjects(tlsSecret, deployment).Build(),
	}
	at := types.NamespacedName{Namespace: "team-a", Name: "sessions-cert"}
	if err := r.Get(ctx, at, &corev1.Secret{}); err != nil {
		t.Errorf("A Secret the owned watches do not hold is read from the TLS Secrets' watch: %v", err)
	}
	if err := r.Get(ctx, at, &appsv1.Deployment{}); !kerrors.IsNotFound(err) {
		t.Errorf("Only a Secret falls back to the TLS Secrets' watch; a Deployment read %v", err)
	}
}
