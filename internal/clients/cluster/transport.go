package cluster

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	sigsjson "sigs.k8s.io/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/clients/kubeconfig"
)

// Requests counts every request the provider sends to target clusters, by config (Label:
// which ClusterProviderConfig, or "ProviderConfig" for every namespaced one, so that tenants
// can neither add series without end nor see one another's server URLs), verb (GET, LIST,
// WATCH, CREATE, PATCH, UPDATE, DELETE) and response code ("error" when there was no
// response). Register it with the provider's metrics registry. It is how a platform team
// checks that an idle provider only watches: LIST and WATCH a few times a minute per watched
// namespace, and no GET per Instance.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "provider_memcached_target_requests_total",
	Help: "Requests the Memcached provider sent to target clusters, by config, verb and response code.",
}, []string{"config", "verb", "code"})

// Label is config k's value of Requests' config label: a ClusterProviderConfig by name (the
// platform writes those), and every namespaced ProviderConfig as one.
func Label(k Key) string {
	if k.Namespace != "" || k.Kind == "" {
		return "ProviderConfig"
	}
	return k.Kind + "/" + k.Name
}

// transport counts each request to a target cluster and, when health is set, records what it
// came to.
type transport struct {
	next   http.RoundTripper
	label  string
	health *health
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rsp, err := t.next.RoundTrip(req)
	resource, verb := describe(req)
	Requests.WithLabelValues(t.label, verb, codeOf(rsp)).Inc()
	if t.health != nil && resource != "" {
		t.health.record(req, resource, rsp, err)
	}
	return rsp, err
}

// bounding reads a target cluster's successful answers before client-go decodes them (and
// before kubeconfig.Untrusted reads them whole): when accounts is set, it charges what the
// watches read to them, and calls drop when a list holds more than they may; when bound is
// set, it refuses an answer (not a watch) that would decode to more, which is what a
// namespaced ProviderConfig's client reads directly and no watch holds.
type bounding struct {
	next     http.RoundTripper
	accounts *accounts
	drop     func(error)
	bound    int64
}

func (t *bounding) RoundTrip(req *http.Request) (*http.Response, error) {
	rsp, err := t.next.RoundTrip(req)
	// client-go decodes any 2xx answer: each is read alike.
	if err != nil || rsp == nil || rsp.StatusCode < http.StatusOK || rsp.StatusCode >= http.StatusMultipleChoices {
		return rsp, err
	}
	resource, verb := describe(req)
	switch {
	case t.accounts != nil && resource != "":
		if rsp, err = t.charge(req, resource, verb, rsp); err != nil && t.drop != nil && !isRelist(err) {
			t.drop(err)
		}
	case t.bound > 0 && verb != "WATCH":
		rsp, err = t.bounded(resource, verb, rsp)
	}
	return rsp, err
}

// readBounded reads body, one JSON value, while check accepts the objects at its second level
// (a list's items) and the estimate of what it decodes to, so far: an answer is refused as
// soon as what it has sent is too much, holding no more of it than that. It reads at most
// kubeconfig.MaxAnswer.
func readBounded(body io.ReadCloser, check func(items int, cost int64) error) ([]byte, error) {
	defer func() { _ = body.Close() }()
	var s scanner
	var b bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		n, err := body.Read(chunk)
		if n > 0 {
			b.Write(chunk[:n])
			s.scan(chunk[:n], nil)
			if b.Len() > kubeconfig.MaxAnswer {
				return nil, errors.Errorf("the server's answer is longer than %d bytes (%d MiB), the most the provider reads of one answer from a target cluster", kubeconfig.MaxAnswer, kubeconfig.MaxAnswer>>20)
			}
			if cerr := check(s.items, s.total); cerr != nil {
				return nil, cerr
			}
		}
		switch {
		case err == io.EOF:
			return b.Bytes(), nil
		case err != nil:
			return nil, err
		}
	}
}

// codeOf is the code label of an answer: its status code when an API server answers with it,
// else its class ("4xx"), so that a server cannot add series with codes of its own; "error"
// without an answer.
func codeOf(rsp *http.Response) string {
	switch {
	case rsp == nil:
		return "error"
	case knownCodes[rsp.StatusCode]:
		return strconv.Itoa(rsp.StatusCode)
	case rsp.StatusCode >= 100 && rsp.StatusCode < 600:
		return strconv.Itoa(rsp.StatusCode/100) + "xx"
	}
	return "other"
}

// knownCodes are the status codes API servers answer with.
var knownCodes = map[int]bool{200: true, 201: true, 202: true, 204: true, 304: true, 400: true, 401: true, 403: true, 404: true, 405: true, 406: true, 409: true, 410: true, 413: true, 415: true, 422: true, 429: true, 500: true, 503: true, 504: true}

// bounded refuses an answer that would decode to more than t.bound, or that is not JSON
// (which the estimate reads), before client-go decodes it.
func (t *bounding) bounded(resource, verb string, rsp *http.Response) (*http.Response, error) {
	if rsp.Body == nil || rsp.Body == http.NoBody {
		return rsp, nil
	}
	if mt, _, _ := mime.ParseMediaType(rsp.Header.Get("Content-Type")); mt != runtime.ContentTypeJSON && rsp.ContentLength != 0 {
		_ = rsp.Body.Close()
		return nil, errors.Errorf("the target cluster answered a %s of %s as %q, not JSON, which is all the provider asks for", strings.ToLower(verb), resource, mt)
	}
	b, err := readBounded(rsp.Body, func(_ int, cost int64) error {
		if cost > t.bound {
			return errors.Errorf("the target cluster's answer to a %s of %s would decode to more than the provider reads of one answer for a namespaced ProviderConfig (%d MiB, half of --max-target-memory-mb)", strings.ToLower(verb), resource, t.bound>>20)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rsp.Body = io.NopCloser(bytes.NewReader(b))
	return rsp, nil
}

// charge charges a list's objects and bytes to resource's account, before client-go decodes
// any, and makes a watch's body charge what it reads. A list's next page (continue) adds to
// its first, which client-go holds with it. Only JSON is accepted (the provider asks for
// nothing else): it is what the objects are counted in.
func (t *bounding) charge(req *http.Request, resource, verb string, rsp *http.Response) (*http.Response, error) {
	if verb != "LIST" && verb != "WATCH" {
		return rsp, nil
	}
	if mt, _, _ := mime.ParseMediaType(rsp.Header.Get("Content-Type")); mt != runtime.ContentTypeJSON {
		_ = rsp.Body.Close()
		return nil, errors.Errorf("the target cluster answered a %s of %s as %q, not JSON, which is all the provider asks for", strings.ToLower(verb), resource, mt)
	}
	a := t.accounts.of(resource)
	if verb == "WATCH" {
		a.restart()
		rsp.Body = &charging{body: rsp.Body, account: a, drop: t.drop}
		return rsp, nil
	}
	next := req.URL.Query().Get("continue") != ""
	b, err := readBounded(rsp.Body, func(items int, cost int64) error { return a.admits(items, cost, next) })
	if err != nil {
		return nil, err
	}
	var l struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []struct{} `json:"items"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &l); err != nil {
		return nil, errors.Wrapf(err, "cannot read the target cluster's list of %s", resource)
	}
	if len(l.Items) == 0 && l.Metadata.Continue != "" {
		return nil, errors.Errorf("the target cluster answered a list of %s with an empty page that says more follow, which an API server never does", resource)
	}
	if err := a.listing(len(l.Items), int64(len(b)), estimateJSON(b), next); err != nil {
		return nil, err
	}
	rsp.Body = io.NopCloser(bytes.NewReader(b))
	return rsp, nil
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
// lists: as much as the last list, at least minWatched, at most MaxWatched. Each watch stream
// is bounded on its own (kubeconfig.MaxWatch), but a watch that ends as a server may end it
// is renewed at once, from where it was, keeping what it added: a server that ended every
// stream just within the bound would have the provider's cache grow without end. Once the
// share is read, the watch fails, and client-go's reflector backs off and lists again, which
// replaces what it held.
const MaxWatched = 8 << 20

// isRelist says whether err is a watch that read its share, which only makes it list again.
func isRelist(err error) bool {
	var r errRelist
	return errors.As(err, &r)
}

// charging is the body of a watch, which charges what it reads to its resource's account:
// each event's estimate once read whole, and fails before an event the ledger cannot hold is
// read whole (and decoded), dropping the namespace.
type charging struct {
	body    io.ReadCloser
	account *account
	drop    func(error)
	scan    scanner
}

func (c *charging) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	if n > 0 {
		var cerr error
		c.scan.scan(p[:n], func(cost int64) {
			if cerr == nil {
				cerr = c.account.read(cost)
			}
		})
		if cerr == nil {
			cerr = c.account.reading(int64(n), c.scan.cost)
		}
		if cerr != nil {
			_ = c.body.Close()
			if !isRelist(cerr) && c.drop != nil {
				c.drop(cerr)
			}
			return 0, cerr
		}
	}
	return n, err
}

func (c *charging) Close() error { return c.body.Close() }
