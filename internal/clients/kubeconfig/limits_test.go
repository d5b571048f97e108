package kubeconfig

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hugeBody is how much a hostile server sends: eight times the bounds.
const hugeBody = 64 << 20

// hugeServer is a namespaced ProviderConfig's https server that answers every request with a
// 200 and a Deployment (or, to a watch, an ADDED event of one) whose annotation is
// hugeBody long, written from a small buffer so that the server allocates next to nothing of
// what the test measures. declared sets the answer's Content-Length.
func hugeServer(t *testing.T, declared bool) (kubeconfig []byte) {
	t.Helper()
	pad := make([]byte, 32<<10)
	for i := range pad {
		pad[i] = 'a'
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		head := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"sessions","namespace":"team-a","annotations":{"pad":"`
		tail := `"}}}`
		if watching(r) {
			head, tail = `{"type":"ADDED","object":`+head, tail+"}\n"
		}
		w.Header().Set("Content-Type", "application/json")
		if declared {
			w.Header().Set("Content-Length", strconv.Itoa(len(head)+hugeBody+len(tail)))
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(head))
		for n := 0; n < hugeBody; n += len(pad) {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(tail))
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return namespacedKubeconfig("    server: " + srv.URL + "\n    certificate-authority-data: " + ca + "\n")
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// testHugeAnswers: a successful answer beyond MaxAnswer fails, naming the bound, and costs
// the provider less than twice the bound, however much the server sends.
func testHugeAnswers(t *testing.T) {
	tooLong := "unexpected error when reading response body. Please retry. Original error: the server's answer is longer than 8388608 bytes (8 MiB), the most the provider reads of one answer from a target cluster"
	cases := map[string]struct {
		reason   string
		declared bool
	}{
		"HugeSuccessfulAnswer": {
			reason: "A 200 with a 64 MiB Deployment, chunked, is read up to the bound and fails.",
		},
		"HugeDeclaredAnswer": {
			reason:   "A 200 that declares a 64 MiB Content-Length fails before any of it is read.",
			declared: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc, err := FromKubeconfig(hugeServer(t, tc.declared), true)
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(rc)
			if err != nil {
				t.Fatal(err)
			}
			var got error
			bytes := allocated(func() {
				got = c.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "sessions"}, &appsv1.Deployment{})
			})
			if diff := cmp.Diff(tooLong, errString(got)); diff != "" {
				t.Errorf("\n%s\nGet: -want error, +got:\n%s", tc.reason, diff)
			}
			if bytes >= 2*MaxAnswer {
				t.Errorf("\n%s\nGet allocated %d MiB, want less than twice the bound, %d MiB", tc.reason, bytes>>20, 2*MaxAnswer>>20)
			}
			t.Logf("allocated %.1f MiB", float64(bytes)/(1<<20))
		})
	}
}

// testHugeWatch: a watch stream beyond MaxWatch ends with an error event naming the bound,
// after a small multiple of the bound was allocated, and the watch closes: client-go's reflector
// then backs off and lists again.
func testHugeWatch(t *testing.T) {
	rc, err := FromKubeconfig(hugeServer(t, false), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(Guard(rc), client.Options{Scheme: Scheme(), Mapper: RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var events []string
	bytes := allocated(func() {
		w, err := c.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace("team-a"))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for e := range w.ResultChan() {
			msg := string(e.Type)
			if s, ok := e.Object.(*metav1.Status); ok {
				msg += ": " + s.Message
			}
			events = append(events, msg)
			if e.Type == watch.Error {
				break
			}
		}
	})
	want := []string{`ERROR: an error on the server ("unable to decode an event from the watch stream: the server's watch stream is longer than 8388608 bytes (8 MiB), the most the provider reads of one watch stream from a target cluster") has prevented the request from succeeding`}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("A watch stream of one 64 MiB event ends at the bound, with an error: -want events, +got:\n%s", diff)
	}
	// The JSON decoder grows its buffer by copying, up to the bound: the copies add up to
	// some four times it, of which about twice is live at a time.
	if bytes >= 5*MaxWatch {
		t.Errorf("the watch allocated %d MiB, want less than five times the bound, %d MiB", bytes>>20, 5*MaxWatch>>20)
	}
	t.Logf("allocated %.1f MiB", float64(bytes)/(1<<20))
}
