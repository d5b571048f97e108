package kubeconfig

import (
	"io"
	"net/http"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Unreachable is all a namespaced ProviderConfig's Instances learn of why the provider could
// not talk to their server: that it could not connect, that nothing answered TLS there, that
// the certificate was for other names or from another CA, that it timed out, or that the
// connection broke, are told apart nowhere but in the provider's debug log.
const Unreachable = "cannot reach the server over TLS verified with the kubeconfig's certificate-authority-data: " +
	"the connection was refused or timed out, the server did not answer TLS, or its certificate is not valid for the kubeconfig's server name " +
	"or not signed by its certificate-authority-data (the provider does not say which to a namespaced ProviderConfig)"

// Conceal wraps the transport to a namespaced ProviderConfig's server so that a failure to
// talk to it says Unreachable and nothing else. The raw error would make the ProviderConfig
// a probe of the provider's network, from the provider's position, for whoever may write a
// Secret in one namespace: "connection refused" (a closed port), "first record does not look
// like a TLS handshake" (an open one), "x509: certificate is valid for db.internal, not …"
// (another service's names), addresses the name resolved to. The errors keep their causes
// for client-go's retries (errors.Is, errors.As) but not their text; the whole error goes to
// the provider's debug log. A ClusterProviderConfig's errors, which the platform's operators
// read, are not concealed.
func Conceal(next http.RoundTripper) http.RoundTripper {
	return concealing{next: next}
}

type concealing struct {
	next http.RoundTripper
}

func (c concealing) RoundTrip(req *http.Request) (*http.Response, error) {
	rsp, err := c.next.RoundTrip(req)
	if err != nil {
		return rsp, conceal(req, err)
	}
	if rsp != nil && rsp.Body != nil && rsp.Body != http.NoBody {
		rsp.Body = concealingBody{body: rsp.Body, req: req}
	}
	return rsp, nil
}

// concealingBody conceals why reading an answer failed: a connection reset names both ends'
// addresses.
type concealingBody struct {
	body io.ReadCloser
	req  *http.Request
}

func (b concealingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	// An end, expected or not, says nothing of the network, and client-go compares it.
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		err = conceal(b.req, err)
	}
	return n, err
}

func (b concealingBody) Close() error { return b.body.Close() }

// conceal logs err whole at debug level and returns it saying Unreachable.
func conceal(req *http.Request, err error) error {
	ctrllog.Log.WithName("target-transport").V(1).Info("cannot reach a namespaced ProviderConfig's server", "host", req.URL.Host, "error", err.Error())
	return concealed{cause: err}
}

// concealed is an error that says Unreachable, and unwraps to its cause.
type concealed struct {
	cause error
}

func (c concealed) Error() string { return Unreachable }

func (c concealed) Unwrap() error { return c.cause }
