package hostile

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/internal/clients/kubeconfig"
)

// start starts a server with small amplified lists and returns a client of it, as a
// kubeconfig the provider accepts for a namespaced ProviderConfig configures it.
func start(t *testing.T, o Options) (*Server, *kubernetes.Clientset, *rest.Config) {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	kc, err := s.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubeconfig.FromKubeconfig(kc, true); err != nil {
		t.Fatalf("the provider refuses the hostile server's kubeconfig for a namespaced ProviderConfig: %v", err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	rc.Timeout = 2 * time.Second
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, rc
}

var opts = Options{
	Flood:           []string{"flood"},
	Stall:           []string{"stall"},
	Instances:       []string{"tenant/one", "other/two"},
	EventsPerSecond: 200,
	ListBytes:       1 << 20,
	Decoys:          4,
}

func TestAmplifiedList(t *testing.T) {
	s, c, _ := start(t, opts)
	ctx := context.Background()
	l, err := c.AppsV1().Deployments("flood").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// {"metadata":{"name":"dN"}} is 24 bytes and more: 1 MiB holds some 30,000.
	if n := len(l.Items); n < 25000 || n > 50000 {
		t.Errorf("an amplified list of 1 MiB holds %d Deployments, want some 30,000", n)
	}
	if l.Items[0].Name != "d1" || l.Items[len(l.Items)-1].Name == "" {
		t.Errorf("items %q … %q, want d1 … dN", l.Items[0].Name, l.Items[len(l.Items)-1].Name)
	}
	for _, list := range []func() (int, error){
		func() (int, error) {
			l, err := c.CoreV1().Services("flood").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.CoreV1().Secrets("flood").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.PolicyV1().PodDisruptionBudgets("flood").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := c.NetworkingV1().NetworkPolicies("flood").List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
	} {
		if n, err := list(); err != nil || n < 25000 {
			t.Errorf("an amplified list: %d items, %v; want some 30,000", n, err)
		}
	}
	if l, err := c.AppsV1().Deployments("stall").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("a list where GETs stall: %v, %v; want it empty", l, err)
	}
	if st := s.Stats(); st.Flooded != 5 || st.FloodedBytes < 5<<20 {
		t.Errorf("stats %s; want 5 amplified lists of 1 MiB", st)
	}
}

func TestAmplifiedInitialEvents(t *testing.T) {
	_, c, _ := start(t, opts)
	w, err := c.AppsV1().Deployments("flood").Watch(context.Background(), metav1.ListOptions{
		SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	added := 0
	for e := range w.ResultChan() {
		if e.Type == watch.Added {
			added++
			continue
		}
		m, _ := e.Object.(metav1.Object)
		if e.Type != watch.Bookmark || m == nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("after %d ADDED events: %s %v, want the bookmark that ends the initial events", added, e.Type, e.Object)
		}
		break
	}
	if added < 5000 {
		t.Errorf("%d initial events in 1 MiB, want thousands", added)
	}
}

func TestStalledGet(t *testing.T) {
	s, c, _ := start(t, opts)
	ctx := context.Background()
	begin := time.Now()
	_, err := c.AppsV1().Deployments("stall").Get(ctx, "sessions", metav1.GetOptions{})
	if err == nil || time.Since(begin) < 2*time.Second {
		t.Errorf("a GET where GETs stall answered %v after %s; want the client to give up after its 2 s", err, time.Since(begin))
	}
	if st := s.Stats(); st.Stalled != 1 {
		t.Errorf("stats %s; want 1 stalled GET", st)
	}
	if _, err := c.AppsV1().Deployments("flood").Get(ctx, "sessions", metav1.GetOptions{}); !kerrors.IsNotFound(err) {
		t.Errorf("a GET elsewhere: %v, want NotFound", err)
	}

	// Calm releases a GET that hangs, and GETs answer at once.
	done := make(chan error)
	go func() {
		_, err := c.AppsV1().Deployments("stall").Get(ctx, "sessions", metav1.GetOptions{})
		done <- err
	}()
	if err := s.Wait(ctxTimeout(t, 10*time.Second), func(st Stats) bool { return st.Stalling == 1 }); err != nil {
		t.Fatal(err)
	}
	s.Calm()
	if err := <-done; !kerrors.IsNotFound(err) {
		t.Errorf("a GET released by Calm: %v, want NotFound", err)
	}
	if l, err := c.AppsV1().Deployments("flood").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("a list once calm: %d items, %v; want none", len(l.Items), err)
	}
}

func TestMadeUpEvents(t *testing.T) {
	s, c, _ := start(t, opts)
	w, err := c.CoreV1().Secrets("stall").Watch(context.Background(), metav1.ListOptions{
		SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	first := <-w.ResultChan()
	if m, _ := first.Object.(metav1.Object); first.Type != watch.Bookmark || m == nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("first event %s %v, want the bookmark that ends no initial events", first.Type, first.Object)
	}
	begin := time.Now()
	named := map[string]int{}
	types := map[watch.EventType]int{}
	for e := range w.ResultChan() {
		m, _ := e.Object.(metav1.Object)
		if m == nil || m.GetLabels()[labelInstanceUID] == "" || m.GetNamespace() != "stall" {
			t.Fatalf("a made-up event %s %v, want an object labelled as the provider's in namespace stall", e.Type, e.Object)
		}
		named[m.GetAnnotations()[annotationInstance]]++
		types[e.Type]++
		if types[watch.Modified] >= 100 {
			break
		}
	}
	rate := float64(types[watch.Added]+types[watch.Modified]) / time.Since(begin).Seconds()
	// Loose bounds: a busy machine (make test runs packages side by side) delays ticks.
	if rate < 50 || rate > 400 {
		t.Errorf("made-up events at %.0f a second, want about 200", rate)
	}
	if types[watch.Added] != 4 || named["tenant/one"] == 0 || named["other/two"] == 0 {
		t.Errorf("events %v naming %v; want 4 ADDED (one per decoy) then MODIFIED, naming both Instances", types, named)
	}
	if s.Stats().Events < 104 {
		t.Errorf("stats %s; want at least 104 events", s.Stats())
	}

	// Calm ends the watch.
	s.Calm()
	select {
	case _, ok := <-drain(w.ResultChan()):
		if ok {
			t.Error("the watch goes on once calm")
		}
	case <-time.After(2 * time.Second):
		t.Error("the watch goes on once calm")
	}
}

// drain forwards nothing and closes once ch is closed.
func drain(ch <-chan watch.Event) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		for range ch {
		}
		close(out)
	}()
	return out
}

func TestRedirectedWrites(t *testing.T) {
	s, c, rc := start(t, opts)
	ctx := context.Background()
	// client-go follows a redirect unless told not to; the provider's client is told.
	_, err := c.AppsV1().Deployments("stall").Patch(ctx, "sessions", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"sessions"}}`), metav1.PatchOptions{FieldManager: "test"})
	t.Logf("an apply with a client that follows redirects: %v", err)
	if st := s.Stats(); st.Redirected != 1 || st.Followed != 1 {
		t.Errorf("stats %s; want the apply redirected and followed to the plain-http listener", st)
	}

	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL+"/apis/apps/v1/namespaces/stall/deployments/sessions", nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, rsp.Body)
	_ = rsp.Body.Close()
	if loc := rsp.Header.Get("Location"); rsp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(loc, "http://127.0.0.1:") {
		t.Errorf("a DELETE answered %d to %q, want 307 to plain http on 127.0.0.1", rsp.StatusCode, loc)
	}
	if st := s.Stats(); st.Redirected != 2 || st.Followed != 1 {
		t.Errorf("stats %s; want 2 redirects, 1 followed", st)
	}
	s.Calm()
	err = c.AppsV1().Deployments("stall").Delete(ctx, "sessions", metav1.DeleteOptions{})
	if !kerrors.IsNotFound(err) {
		t.Errorf("a DELETE once calm: %v, want NotFound", err)
	}
}

func TestOther(t *testing.T) {
	s, c, _ := start(t, opts)
	if v, err := c.Discovery().ServerVersion(); err != nil || v.Minor != "35" {
		t.Errorf("version %v, %v", v, err)
	}
	_, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if !kerrors.IsNotFound(err) {
		t.Errorf("a cluster-scoped list: %v, want NotFound", err)
	}
	s.Close()
	s.Close()
	if _, err := c.AppsV1().Deployments("stall").List(context.Background(), metav1.ListOptions{}); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("a list once closed: %v, want a connection error", err)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
