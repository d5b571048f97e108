package cluster

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Requests counts every request the provider sends to target clusters, by cluster (its
// server URL), verb (GET, LIST, WATCH, CREATE, PATCH, UPDATE, DELETE) and response code
// ("error" when there was no response). Register it with the provider's metrics registry. It
// is how a platform team checks that an idle provider only watches: LIST and WATCH a few
// times a minute per watched namespace, and no GET per Instance.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "provider_memcached_target_requests_total",
	Help: "Requests the Memcached provider sent to target clusters, by cluster, verb and response code.",
}, []string{"cluster", "verb", "code"})

// transport counts each request to a target cluster and, when health is set, records what it
// came to; when budget is set, it bounds what the watches read between lists.
type transport struct {
	next   http.RoundTripper
	host   string
	health *health
	budget *budget
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rsp, err := t.next.RoundTrip(req)
	resource, verb := describe(req)
	if t.budget != nil && err == nil && rsp != nil && rsp.StatusCode == http.StatusOK && resource != "" {
		t.budget.spend(req, resource, verb, rsp)
	}
	code := "error"
	if rsp != nil {
		code = strconv.Itoa(rsp.StatusCode)
	}
	Requests.WithLabelValues(t.host, verb, code).Inc()
	if t.health != nil && resource != "" {
		t.health.record(req, resource, rsp, err)
	}
	return rsp, err
}

// describe names the resource (the plural, for namespaced resource paths; "" otherwise)
// and the Kubernetes verb of a request.
func describe(req *http.Request) (resource, verb string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	collection := false
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			resource = parts[i+2]
			collection = i+3 == len(parts)
			break
		}
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			return resource, "WATCH"
		case collection:
			return resource, "LIST"
		}
		return resource, "GET"
	case http.MethodPost:
		return resource, "CREATE"
	case http.MethodPut:
		return resource, "UPDATE"
	case http.MethodPatch:
		return resource, "PATCH"
	case http.MethodDelete:
		return resource, "DELETE"
	}
	return resource, req.Method
}

// health is what the latest request for each resource of one watched namespace came to:
// the watches list and re-watch regularly, so a cluster that went away, credentials that
// were revoked or permissions that were withdrawn show within one watch timeout, and the
// return of the cluster at the watches' next retry. It calls changed whenever the namespace
// turns unhealthy or healthy again.
type health struct {
	mu      sync.Mutex
	errs    map[string]error
	changed func()
}

func newHealth(changed func()) *health {
	return &health{errs: map[string]error{}, changed: changed}
}

// err is nil while the latest request for every resource succeeded, else the first
// resource's error, by resource name.
func (h *health) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.firstErr()
}

func (h *health) firstErr() error {
	var first string
	for r, err := range h.errs {
		if err != nil && (first == "" || r < first) {
			first = r
		}
	}
	if first == "" {
		return nil
	}
	return h.errs[first]
}

// record notes what one request came to. A request the provider itself cancelled says
// nothing about the cluster; neither do answers that are about the request (not found,
// conflict, too many requests). A redirect is a failure: the provider follows none.
func (h *health) record(req *http.Request, resource string, rsp *http.Response, err error) {
	var outcome error
	switch {
	case err != nil && req.Context().Err() != nil:
		return
	case err != nil:
		outcome = errors.Wrapf(err, "cannot reach %s", req.URL.Host)
	case rsp.StatusCode >= http.StatusMultipleChoices && rsp.StatusCode < http.StatusBadRequest,
		rsp.StatusCode == http.StatusUnauthorized || rsp.StatusCode == http.StatusForbidden || rsp.StatusCode >= http.StatusInternalServerError:
		outcome = errors.New(statusMessage(rsp))
	case rsp.StatusCode == http.StatusTooManyRequests:
		return
	}
	h.mu.Lock()
	before := h.firstErr() == nil
	h.errs[resource] = outcome
	after := h.firstErr() == nil
	h.mu.Unlock()
	if before != after && h.changed != nil {
		h.changed()
	}
}

// statusMessage reads the Kubernetes Status an API server answers a failed request with,
// putting the body back for the client to read too, and falls back to the HTTP status code
// and its standard text (not the server's own reason phrase, which could say anything).
func statusMessage(rsp *http.Response) string {
	fallback := "the server answered " + strconv.Itoa(rsp.StatusCode) + " " + http.StatusText(rsp.StatusCode)
	if rsp.Body == nil {
		return fallback
	}
	b, err := io.ReadAll(io.LimitReader(rsp.Body, 64<<10))
	_ = rsp.Body.Close()
	rsp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return fallback
	}
	o, _, err := statusCodecs.UniversalDeserializer().Decode(b, nil, &metav1.Status{})
	if s, ok := o.(*metav1.Status); err != nil || !ok || s.Message == "" {
		return fallback
	}
	return o.(*metav1.Status).Message
}

// statusCodecs decode a Kubernetes Status in JSON or in protobuf, which API servers answer
// clients of built-in kinds with.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

// MaxWatched bounds what the watches of one resource in one namespace read between two
// lists. Each watch stream is bounded on its own (kubeconfig.MaxWatch), but a watch that ends
// as a server may end it is renewed at once, from where it was, keeping what it added: a
// server that ended every stream just within the bound would have the provider's cache grow
// without end. With the budget, what an informer holds is at most one list (or the initial
// events of one watch that sends them) and MaxWatched of changes; once it is spent the watch
// fails, and client-go's reflector backs off and lists again, which replaces what it held.
const MaxWatched = 8 << 20

// budget is what the watches of one namespace may still read of each resource before they
// list again.
type budget struct {
	mu   sync.Mutex
	left map[string]int64
}

func newBudget() *budget {
	return &budget{left: map[string]int64{}}
}

// spend renews resource's budget when rsp is a list (or a watch that sends its initial
// events, which replaces what the informer holds too), and makes a watch's body spend it.
func (b *budget) spend(req *http.Request, resource, verb string, rsp *http.Response) {
	initial := req.URL.Query().Get("sendInitialEvents") == "true"
	switch {
	case verb == "LIST" || verb == "WATCH" && initial:
		b.mu.Lock()
		b.left[resource] = MaxWatched
		b.mu.Unlock()
	}
	if verb == "WATCH" && rsp.Body != nil {
		rsp.Body = &spending{body: rsp.Body, budget: b, resource: resource}
	}
}

// take spends n bytes of resource's budget, and says whether it lasted. A resource never
// listed has a full budget.
func (b *budget) take(resource string, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	left, ok := b.left[resource]
	if !ok {
		left = MaxWatched
	}
	b.left[resource] = left - int64(n)
	return left-int64(n) >= 0
}

// spending is the body of a watch, which spends its resource's budget.
type spending struct {
	body     io.ReadCloser
	budget   *budget
	resource string
}

func (s *spending) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 && !s.budget.take(s.resource, n) {
		_ = s.body.Close()
		return 0, errors.Errorf("the watches of %s read more than %d bytes (%d MiB) since they last listed, the most the provider holds of one resource in one namespace: they list again", s.resource, MaxWatched, MaxWatched>>20)
	}
	return n, err
}

func (s *spending) Close() error { return s.body.Close() }
