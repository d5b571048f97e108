package kubeconfig

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// maxStatusBody bounds how much of a failed answer is read to look for a Kubernetes Status:
// an API server's Status is a few hundred bytes, and a bigger answer is not shown anyway.
const maxStatusBody = 64 << 10

// Guard makes every client built from rc treat the target cluster's answers as untrusted
// (see Untrusted). It changes rc, and returns it.
func Guard(rc *rest.Config) *rest.Config {
	rc.Wrap(Untrusted)
	return rc
}

// Untrusted wraps the transport to a target cluster so that its server, which whoever
// writes a kubeconfig Secret chooses, can neither send the provider on nor have the
// provider repeat what it says:
//
//   - a redirect is never followed. Go's http.Client, which client-go builds for every
//     client of a rest.Config without a CheckRedirect, follows up to ten, to any URL,
//     plain http included, with the method and body of a 307 or 308 (a DELETE stays a
//     DELETE) and, through client-go's own auth wrappers, the bearer token; a server a
//     namespaced ProviderConfig verified with its own CA could thus make the provider
//     send requests from its own network position anywhere. The answer becomes a failure
//     Status naming the status code, and the Location goes.
//
//   - a failed answer (3xx, 4xx, 5xx) reaches the client only as a Kubernetes Status, which
//     is what an API server answers with. Any other body (an HTML page, a service's data)
//     is replaced by a Status with the code, its reason and the standard status text, so
//     that it never reaches an Instance's conditions or events.
//
//   - a successful answer is read up to a bound, MaxAnswer, or MaxWatch for a watch stream:
//     a server that answers with a huge object or an endless stream would otherwise have
//     the provider, which every tenant shares, read it into memory until it is killed. The
//     bound reached, reading fails with an error that names it.
//
// Successful answers pass as they are otherwise.
func Untrusted(next http.RoundTripper) http.RoundTripper {
	return untrusted{next: next}
}

type untrusted struct {
	next http.RoundTripper
}

func (u untrusted) RoundTrip(req *http.Request) (*http.Response, error) {
	rsp, err := u.next.RoundTrip(req)
	if err != nil || rsp == nil {
		return rsp, err
	}
	if rsp.StatusCode < http.StatusMultipleChoices {
		limit(req, rsp)
		return rsp, nil
	}
	redirect := rsp.StatusCode < http.StatusBadRequest
	rsp.Header.Del("Location")
	var b []byte
	if rsp.Body != nil {
		b, _ = io.ReadAll(io.LimitReader(rsp.Body, maxStatusBody+1))
		_ = rsp.Body.Close()
	}
	st, ok := status(b)
	if redirect || !ok || len(b) > maxStatusBody {
		st = kerrors.NewGenericServerResponse(rsp.StatusCode, req.Method, schema.GroupResource{}, "", "", 0, false).ErrStatus
		st.Details = nil
		st.Message = "the server answered " + strconv.Itoa(rsp.StatusCode) + " " + http.StatusText(rsp.StatusCode)
		if redirect {
			st.Message += ", a redirect, which the provider never follows from a target cluster"
		} else {
			st.Message += " without a Kubernetes Status; the provider does not repeat what else it said"
		}
	}
	// Whatever the server said it was, the answer is a failure, in JSON: client-go shows a
	// Status only so, and an answer it cannot decode as one would reach its error whole.
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Status = metav1.StatusFailure
	if st.Code == 0 {
		st.Code = int32(rsp.StatusCode)
	}
	body, err := json.Marshal(st)
	if err != nil {
		// A Status always marshals.
		return nil, err
	}
	rsp.Header.Del("Content-Encoding")
	rsp.Body = io.NopCloser(bytes.NewReader(body))
	rsp.ContentLength = int64(len(body))
	rsp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	rsp.Header.Set("Content-Type", "application/json")
	return rsp, nil
}

// status decodes b if it is a Kubernetes Status, in JSON or protobuf, that says it is one:
// any JSON object would decode into a Status otherwise.
func status(b []byte) (metav1.Status, bool) {
	o, _, err := statusCodecs.UniversalDeserializer().Decode(b, nil, nil)
	if st, ok := o.(*metav1.Status); err == nil && ok {
		return *st, true
	}
	return metav1.Status{}, false
}

// statusCodecs decode a Kubernetes Status in JSON or in protobuf, which API servers answer
// clients of built-in kinds with.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()
