package kubeconfig

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenantServer is a namespaced ProviderConfig's https server, answering every request with
// code, headers and body; its kubeconfig embeds the server's own CA, as such a
// ProviderConfig's must.
func tenantServer(t *testing.T, code int, header map[string]string, body string) (kubeconfig []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return namespacedKubeconfig("    server: " + srv.URL + "\n    certificate-authority-data: " + ca + "\n")
}

// plainHTTP is a plain-http service inside the provider's network, counting the requests
// it receives.
func plainHTTP(t *testing.T) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"internal service data: db-password=hunter2"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

func TestUntrusted(t *testing.T) {
	internal, requests := plainHTTP(t)
	secret := "db-password=hunter2"
	type args struct {
		code   int
		header map[string]string
		body   string
		verb   string
	}
	type want struct {
		// requests the plain-http service received.
		requests int32
		code     int32
		reason   metav1.StatusReason
		err      string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"TemporaryRedirectGet": {
			reason: "A 307 to a plain-http service is not followed: the service receives no GET, and the error names the status code.",
			args:   args{code: http.StatusTemporaryRedirect, header: map[string]string{"Location": internal + "/secrets"}, body: secret, verb: http.MethodGet},
			want:   want{code: 307, err: "the server answered 307 Temporary Redirect, a redirect, which the provider never follows from a target cluster"},
		},
		"TemporaryRedirectDelete": {
			reason: "A 307 keeps the method when followed: the service receives no DELETE.",
			args:   args{code: http.StatusTemporaryRedirect, header: map[string]string{"Location": internal + "/objects/1"}, body: secret, verb: http.MethodDelete},
			want:   want{code: 307, err: "the server answered 307 Temporary Redirect, a redirect, which the provider never follows from a target cluster"},
		},
		"PermanentRedirectDelete": {
			reason: "Neither is a 308 followed.",
			args:   args{code: http.StatusPermanentRedirect, header: map[string]string{"Location": internal}, verb: http.MethodDelete},
			want:   want{code: 308, err: "the server answered 308 Permanent Redirect, a redirect, which the provider never follows from a target cluster"},
		},
		"FoundGet": {
			reason: "Nor a 302, even with a Kubernetes Status for a body.",
			args:   args{code: http.StatusFound, header: map[string]string{"Location": internal, "Content-Type": "application/json"}, body: `{"kind":"Status","apiVersion":"v1","status":"Failure","code":302,"message":"go there"}`, verb: http.MethodGet},
			want:   want{code: 302, err: "the server answered 302 Found, a redirect, which the provider never follows from a target cluster"},
		},
		"ServerErrorBody": {
			reason: "A 500 with a body that is not a Kubernetes Status reaches the error as its status code and reason only.",
			args:   args{code: http.StatusInternalServerError, header: map[string]string{"Content-Type": "text/plain"}, body: secret, verb: http.MethodGet},
			want:   want{code: 500, reason: metav1.StatusReasonInternalError, err: "the server answered 500 Internal Server Error without a Kubernetes Status; the provider does not repeat what else it said"},
		},
		"ServerErrorNoContentType": {
			reason: "An answer without a content type, which client-go would quote whole, is not repeated either.",
			args:   args{code: http.StatusBadGateway, body: secret, verb: http.MethodDelete},
			want:   want{code: 502, reason: metav1.StatusReasonInternalError, err: "the server answered 502 Bad Gateway without a Kubernetes Status; the provider does not repeat what else it said"},
		},
		"KindlessJSON": {
			reason: "JSON that does not say it is a Status is not taken for one.",
			args:   args{code: http.StatusInternalServerError, header: map[string]string{"Content-Type": "application/json"}, body: `{"message":"` + secret + `"}`, verb: http.MethodGet},
			want:   want{code: 500, reason: metav1.StatusReasonInternalError, err: "the server answered 500 Internal Server Error without a Kubernetes Status; the provider does not repeat what else it said"},
		},
		"NotFoundHTML": {
			reason: "An HTML 404 stays a NotFound, which a delete takes for done, without its page.",
			args:   args{code: http.StatusNotFound, header: map[string]string{"Content-Type": "text/html"}, body: "<html>" + secret + "</html>", verb: http.MethodGet},
			want:   want{code: 404, reason: metav1.StatusReasonNotFound, err: "the server answered 404 Not Found without a Kubernetes Status; the provider does not repeat what else it said"},
		},
		"KubernetesStatus": {
			reason: "An API server's own Status passes, whatever content type it came with: it says why, as operators need.",
			args: args{code: http.StatusForbidden, header: map[string]string{"Content-Type": "text/plain"}, verb: http.MethodGet,
				body: `{"kind":"Status","apiVersion":"v1","status":"Failure","code":403,"reason":"Forbidden","message":"deployments.apps \"sessions\" is forbidden: User \"memcached\" cannot get resource \"deployments\""}`},
			want: want{code: 403, reason: metav1.StatusReasonForbidden, err: `deployments.apps "sessions" is forbidden: User "memcached" cannot get resource "deployments"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc, err := FromKubeconfig(tenantServer(t, tc.args.code, tc.args.header, tc.args.body), true)
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(rc)
			if err != nil {
				t.Fatal(err)
			}
			before := requests.Load()
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sessions"}}
			switch tc.args.verb {
			case http.MethodGet:
				err = c.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "sessions"}, d)
			case http.MethodDelete:
				err = c.Delete(context.Background(), d, client.PropagationPolicy(metav1.DeletePropagationBackground))
			}
			got := want{requests: requests.Load() - before, err: errString(err)}
			if s, ok := err.(kerrors.APIStatus); ok {
				got.code, got.reason = s.Status().Code, s.Status().Reason
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\n%s: -want, +got:\n%s", tc.reason, tc.args.verb, diff)
			}
		})
	}
	testHugeAnswers(t)
	t.Run("HugeWatchStream", testHugeWatch)
	t.Run("TransportErrorsNameNoPeer", testTransportErrorsNameNoPeer)
}
