// Package hostile is a Kubernetes API server that a tenant who writes a namespaced
// ProviderConfig could point the shared Memcached provider at: it speaks enough of the API
// (JSON only) for the provider's client and watches to use it, and then does to them what a
// hostile server would (issue 43):
//
//   - in the namespaces of Options.Flood, every list of a namespaced resource — a LIST, or a
//     watch asking for its initial events (sendInitialEvents=true, what client-go 1.35's
//     reflectors ask first) — answers about Options.ListBytes of tiny items
//     ({"metadata":{"name":"d1"}}, …): as many objects as fit;
//   - in the namespaces of Options.Stall, lists answer at once and empty (the namespace looks
//     healthy), watches stay open, and every GET of a single object hangs until the client
//     gives up (or the server calms down or closes);
//   - every watch that is not flooding streams made-up ADDED and MODIFIED events, at
//     Options.EventsPerSecond, of objects labelled as the provider's and annotated
//     memcached.example.com/instance: <namespace>/<name> naming each of Options.Instances in
//     turn;
//   - every write (POST, PUT, PATCH, DELETE) answers 307 Temporary Redirect to the same path
//     on a plain-http listener of its own, which counts what reaches it: a client that
//     follows redirects shows there (Stats.Followed).
//
// Calm makes it an empty, well-behaved cluster: lists answer empty, watches send nothing, a
// GET of an object answers NotFound, and a DELETE NotFound: what lets a provider let go of
// the tenant's Instances.
//
// The server listens on 127.0.0.1 with TLS, under a certificate of a CA of its own, which
// Kubeconfig embeds: a namespaced ProviderConfig's kubeconfig must verify TLS.
package hostile

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/pki"
	"github.com/example/function-memcached/test/e2e/internal/provider"
)

// Labels and annotations of the provider's API, which the made-up objects carry.
const (
	labelInstanceUID   = "memcached.example.com/instance-uid"
	annotationInstance = "memcached.example.com/instance"
)

// DefaultListBytes is how much an amplified list answers: just under 8 MiB, as many tiny
// items as fit in the most the provider reads of one answer (8 MiB, docs/operations.md), so
// that what stops the provider is the number of objects or the memory they would take, not
// the answer's size. One such answer grew the provider's heap by 370 MiB before issue 43.
const DefaultListBytes = 8<<20 - 64<<10

// Options say what the server does.
type Options struct {
	// Flood are the namespaces whose lists are amplified.
	Flood []string
	// Stall are the namespaces where a GET of a single object hangs.
	Stall []string
	// Instances name the Instances ("<namespace>/<name>") the made-up watch events'
	// annotations name, in turn.
	Instances []string
	// EventsPerSecond is how many made-up events each watch sends a second; 0 sends none.
	EventsPerSecond int
	// ListBytes is about how much an amplified list answers; DefaultListBytes when 0.
	ListBytes int
	// Decoys is how many distinct objects the made-up events name in each watch (their
	// names cycle); 64 when 0.
	Decoys int
}

// Stats count what the server answered.
type Stats struct {
	// Lists, Watches, Gets and Writes count the requests of each kind.
	Lists, Watches, Gets, Writes int64
	// Flooded counts the amplified lists (LISTs and watches' initial events) and
	// FloodedBytes what they wrote (a client that stops reading leaves some in socket buffers).
	Flooded, FloodedBytes int64
	// Stalled counts the GETs that hung, and Stalling those that still hang.
	Stalled, Stalling int64
	// Events counts the made-up watch events sent.
	Events int64
	// Redirected counts the writes answered with a redirect, and Followed the requests
	// that arrived where they pointed.
	Redirected, Followed int64
}

func (s Stats) String() string {
	return fmt.Sprintf("%d lists, %d watches, %d gets, %d writes; %d amplified lists (%d MiB); %d stalled GETs (%d still hanging); %d made-up events; %d redirects, %d followed",
		s.Lists, s.Watches, s.Gets, s.Writes, s.Flooded, s.FloodedBytes>>20, s.Stalled, s.Stalling, s.Events, s.Redirected, s.Followed)
}

// A Server is a running hostile API server.
type Server struct {
	// URL is its https address, for a kubeconfig.
	URL string
	// CAPEM is the CA its certificate verifies against.
	CAPEM []byte

	opts     Options
	tls      *httptest.Server
	plain    *httptest.Server
	calm     atomic.Bool
	calmed   chan struct{}
	calmOnce sync.Once
	closed   chan struct{}
	rv       atomic.Int64

	lists, watches, gets, writes atomic.Int64
	flooded, floodedBytes        atomic.Int64
	stalled, stalling, events    atomic.Int64
	redirected, followed         atomic.Int64
}

// Start starts a server on 127.0.0.1.
func Start(o Options) (*Server, error) {
	if o.ListBytes == 0 {
		o.ListBytes = DefaultListBytes
	}
	if o.Decoys == 0 {
		o.Decoys = 64
	}
	ca, err := pki.NewCA("hostile-ca")
	if err != nil {
		return nil, err
	}
	kp, err := ca.Issue(pki.Request{CommonName: "hostile", IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return nil, errors.Wrap(err, "cannot load the hostile server's certificate")
	}
	s := &Server{CAPEM: ca.CertPEM, opts: o, calmed: make(chan struct{}), closed: make(chan struct{})}
	s.rv.Store(1000)
	s.plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.followed.Add(1)
		writeJSON(w, http.StatusOK, map[string]any{})
	}))
	s.tls = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.tls.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.tls.StartTLS()
	s.URL = s.tls.URL
	return s, nil
}

// Kubeconfig is a kubeconfig of the server, verified with its CA, with a made-up token.
func (s *Server) Kubeconfig() ([]byte, error) {
	return provider.Kubeconfig(s.URL, s.CAPEM, "hostile-token")
}

// Calm makes the server an empty, well-behaved cluster from now on, releasing every GET
// that hangs and ending every watch.
func (s *Server) Calm() {
	s.calmOnce.Do(func() {
		s.calm.Store(true)
		close(s.calmed)
	})
}

// Close stops the server, ending whatever hangs.
func (s *Server) Close() {
	select {
	case <-s.closed:
		return
	default:
	}
	close(s.closed)
	s.tls.CloseClientConnections()
	s.tls.Close()
	s.plain.Close()
}

// Stats says what the server answered so far.
func (s *Server) Stats() Stats {
	return Stats{
		Lists: s.lists.Load(), Watches: s.watches.Load(), Gets: s.gets.Load(), Writes: s.writes.Load(),
		Flooded: s.flooded.Load(), FloodedBytes: s.floodedBytes.Load(),
		Stalled: s.stalled.Load(), Stalling: s.stalling.Load(), Events: s.events.Load(),
		Redirected: s.redirected.Load(), Followed: s.followed.Load(),
	}
}

// A kind is what the server knows of a resource.
type kind struct {
	apiVersion, kind string
}

// kinds are the namespaced resources the server answers for, by API path prefix and plural.
var kinds = map[string]kind{
	"/api/v1/services":                              {"v1", "Service"},
	"/api/v1/secrets":                               {"v1", "Secret"},
	"/api/v1/pods":                                  {"v1", "Pod"},
	"/api/v1/configmaps":                            {"v1", "ConfigMap"},
	"/apis/apps/v1/deployments":                     {"apps/v1", "Deployment"},
	"/apis/policy/v1/poddisruptionbudgets":          {"policy/v1", "PodDisruptionBudget"},
	"/apis/networking.k8s.io/v1/networkpolicies":    {"networking.k8s.io/v1", "NetworkPolicy"},
	"/apis/apps/v1/replicasets":                     {"apps/v1", "ReplicaSet"},
	"/apis/discovery.k8s.io/v1/endpointslices":      {"discovery.k8s.io/v1", "EndpointSlice"},
	"/apis/coordination.k8s.io/v1/leases":           {"coordination.k8s.io/v1", "Lease"},
	"/apis/autoscaling/v2/horizontalpodautoscalers": {"autoscaling/v2", "HorizontalPodAutoscaler"},
}

// A request is a namespaced resource request: /api/v1/namespaces/<ns>/<plural>[/<name>] or
// /apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>].
type request struct {
	kind
	namespace, name string
}

// parse reads a namespaced resource path; ok is false for anything else.
func parse(path string) (request, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	i := slices.Index(parts, "namespaces")
	if i < 2 || i+2 >= len(parts) || i+4 < len(parts) {
		return request{}, false
	}
	k, ok := kinds["/"+strings.Join(parts[:i], "/")+"/"+parts[i+2]]
	if !ok {
		return request{}, false
	}
	r := request{kind: k, namespace: parts[i+1]}
	if i+3 < len(parts) {
		r.name = parts[i+3]
	}
	return r, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/version":
		writeJSON(w, http.StatusOK, map[string]any{"major": "1", "minor": "35", "gitVersion": "v1.35.0-hostile"})
		return
	case "/api":
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIVersions", "versions": []any{"v1"}})
		return
	case "/apis":
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{}})
		return
	}
	req, ok := parse(r.URL.Path)
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	if r.Method != http.MethodGet {
		s.write(w, r)
		return
	}
	q := r.URL.Query()
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		s.watch(w, r, req)
	case req.name == "":
		s.list(w, req)
	default:
		s.get(w, r, req)
	}
}

func (s *Server) flooding(ns string) bool { return !s.calm.Load() && slices.Contains(s.opts.Flood, ns) }
func (s *Server) stallsIn(ns string) bool { return !s.calm.Load() && slices.Contains(s.opts.Stall, ns) }

// write answers a write with a redirect to the plain-http listener (or, calm, a DELETE with
// NotFound: nothing is there).
func (s *Server) write(w http.ResponseWriter, r *http.Request) {
	s.writes.Add(1)
	if s.calm.Load() && r.Method == http.MethodDelete {
		writeStatus(w, http.StatusNotFound, "NotFound", "not found")
		return
	}
	s.redirected.Add(1)
	w.Header().Set("Location", s.plain.URL+r.URL.RequestURI())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTemporaryRedirect)
	_, _ = w.Write([]byte(`{}`))
}

// list answers a LIST: amplified in a flooded namespace, empty elsewhere.
func (s *Server) list(w http.ResponseWriter, req request) {
	s.lists.Add(1)
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 64<<10)
	defer func() { _ = bw.Flush() }()
	rv := strconv.FormatInt(s.rv.Load(), 10)
	fmt.Fprintf(bw, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q},"items":[`, req.kind.kind+"List", req.apiVersion, rv)
	if s.flooding(req.namespace) {
		s.flooded.Add(1)
		n := 0
		for i := 1; n < s.opts.ListBytes; i++ {
			item := `{"metadata":{"name":"d` + strconv.Itoa(i) + `"}}`
			if i > 1 {
				item = "," + item
			}
			m, err := bw.WriteString(item)
			n += m
			if err != nil {
				break
			}
		}
		s.floodedBytes.Add(int64(n))
	}
	_, _ = bw.WriteString("]}")
}

// get answers a GET of one object: it hangs in a stalled namespace, and is NotFound
// elsewhere.
func (s *Server) get(w http.ResponseWriter, r *http.Request, req request) {
	s.gets.Add(1)
	if s.stallsIn(req.namespace) {
		s.stalled.Add(1)
		s.stalling.Add(1)
		select {
		case <-r.Context().Done():
		case <-s.calmed:
		case <-s.closed:
		}
		s.stalling.Add(-1)
		if r.Context().Err() != nil {
			return
		}
	}
	writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", strings.ToLower(req.kind.kind)+"s", req.name))
}

// watch answers a watch: with its initial events first when asked for them (amplified in a
// flooded namespace, none elsewhere, then the bookmark that ends them), then, until the
// watch's timeout, the client's leaving or calm, made-up events.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, req request) {
	s.watches.Add(1)
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, http.StatusInternalServerError, "InternalError", "cannot stream")
		return
	}
	q := r.URL.Query()
	end := time.Duration(1<<63 - 1)
	if v, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && v > 0 {
		end = time.Duration(v) * time.Second
	}
	deadline := time.NewTimer(end)
	defer deadline.Stop()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	send := func(typ string, obj map[string]any) bool {
		b, err := json.Marshal(map[string]any{"type": typ, "object": obj})
		if err != nil {
			return false
		}
		_, err = bw.Write(append(b, '\n'))
		return err == nil
	}
	flush := func() bool {
		if err := bw.Flush(); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if q.Get("sendInitialEvents") == "true" {
		if s.flooding(req.namespace) {
			s.flooded.Add(1)
			n := 0
			for i := 1; n < s.opts.ListBytes; i++ {
				line := `{"type":"ADDED","object":{"apiVersion":"` + req.apiVersion + `","kind":"` + req.kind.kind + `","metadata":{"name":"d` + strconv.Itoa(i) + `","namespace":"` + req.namespace + `","resourceVersion":"1"}}}` + "\n"
				m, err := bw.WriteString(line)
				n += m
				if err != nil {
					return
				}
			}
			s.floodedBytes.Add(int64(n))
		}
		if !send("BOOKMARK", map[string]any{
			"apiVersion": req.apiVersion, "kind": req.kind.kind,
			"metadata": map[string]any{
				"resourceVersion": strconv.FormatInt(s.rv.Load(), 10),
				"annotations":     map[string]any{"k8s.io/initial-events-end": "true"},
			},
		}) || !flush() {
			return
		}
	} else if !flush() {
		return
	}

	var tick <-chan time.Time
	perTick := 0
	if s.opts.EventsPerSecond > 0 && len(s.opts.Instances) > 0 {
		// Ten batches a second.
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		tick = t.C
		perTick = max(1, s.opts.EventsPerSecond/10)
	}
	for n := 0; ; {
		select {
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		case <-s.calmed:
			return
		case <-deadline.C:
			return
		case <-tick:
		}
		if s.calm.Load() {
			return
		}
		for range perTick {
			typ := "MODIFIED"
			if n < s.opts.Decoys {
				typ = "ADDED"
			}
			if !send(typ, s.decoy(req, n)) {
				return
			}
			s.events.Add(1)
			n++
		}
		if !flush() {
			return
		}
	}
}

// decoy is the n-th made-up object of a watch: one of Options.Decoys names, labelled as the
// provider's and annotated with one of Options.Instances.
func (s *Server) decoy(req request, n int) map[string]any {
	meta := map[string]any{
		"name":            fmt.Sprintf("decoy-%d", n%s.opts.Decoys),
		"namespace":       req.namespace,
		"uid":             fmt.Sprintf("00000000-0000-0000-0000-%012d", n%s.opts.Decoys),
		"resourceVersion": strconv.FormatInt(s.rv.Add(1), 10),
		"labels":          map[string]any{labelInstanceUID: "made-up"},
		"annotations":     map[string]any{annotationInstance: s.opts.Instances[n%len(s.opts.Instances)]},
	}
	o := map[string]any{"apiVersion": req.apiVersion, "kind": req.kind.kind, "metadata": meta}
	if req.kind.kind == "Secret" {
		o["type"] = "kubernetes.io/tls"
	}
	return o
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	writeJSON(w, code, map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code,
	})
}

// Wait waits until check holds for the server's stats, or ctx ends.
func (s *Server) Wait(ctx context.Context, check func(Stats) bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if check(s.Stats()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Wrapf(ctx.Err(), "the hostile server's stats: %s", s.Stats())
		case <-t.C:
		}
	}
}
