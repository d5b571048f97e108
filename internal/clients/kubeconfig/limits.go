package kubeconfig

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// MaxAnswer bounds a successful answer of a target cluster that is not a watch: a get, an
// apply's or a delete's answer, or a list of what the provider owns in one namespace. An API
// server refuses request bodies over 3 MiB and etcd objects over about 1.5 MiB, so one object
// is far smaller; and the provider lists only the Deployments, Services and
// PodDisruptionBudgets labelled with an Instance's UID in one namespace, one of each per
// Instance, a few KiB each: 8 MiB is a list of some two thousand Instances in one namespace
// of one cluster. The only other list, of one Memcached's pods while it is not available,
// asks for at most a hundred. A bigger answer fails, and is never held whole in memory.
const MaxAnswer = 8 << 20

// MaxWatch bounds the whole of one watch stream of a target cluster. A watch runs for the
// provider's watch timeout (minutes) and carries the changes of what it watches in one
// namespace: 8 MiB is thousands of changes. JSON events have no length the provider could
// check before reading one, so the stream as a whole is bounded; a stream that reaches the
// bound ends with an error, after which client-go's reflector backs off (800ms doubling to
// 30s) and lists again, so that what it holds is never more than one list and one stream.
const MaxWatch = 8 << 20

// watching says whether req opens a watch stream.
func watching(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// limit bounds the body of a successful answer to req: MaxWatch for a watch, MaxAnswer
// otherwise. An answer that says it is longer fails before anything of it is read.
func limit(req *http.Request, rsp *http.Response) {
	if rsp.Body == nil || rsp.Body == http.NoBody {
		return
	}
	max, what := int64(MaxAnswer), "answer"
	if watching(req) {
		max, what = MaxWatch, "watch stream"
	}
	b := &limited{body: rsp.Body, left: max, err: errors.Errorf("the server's %s is longer than %d bytes (%s), the most the provider reads of one %s from a target cluster", what, max, mib(max), what)}
	if rsp.ContentLength > max {
		_ = rsp.Body.Close()
		b.left = -1
	}
	rsp.Body = b
	if what == "answer" {
		rsp.Body = buffered(b, rsp.ContentLength)
	}
}

// buffered reads body whole, up to its bound, in chunks that are never copied, and returns
// a reader of what it read, or one that fails with the error reading stopped at: client-go
// reads a whole answer into a slice it grows by copying, which for an answer cut at the
// bound would allocate several times the bound; read this way the provider allocates about
// once what came, and client-go makes its copy only of an answer within the bound.
//
// The first chunk fits an answer of length (when known, and small) and its end; the next
// ones double up to 64 KiB, so that a small answer costs little more than itself.
func buffered(body io.ReadCloser, length int64) io.ReadCloser {
	defer func() { _ = body.Close() }()
	var chunks []io.Reader
	size := 4 << 10
	if length >= 0 && length < 64<<10 {
		size = int(length) + 1
	}
	for {
		c := make([]byte, size)
		size = min(2*size, 64<<10)
		n, err := io.ReadFull(body, c)
		if n > 0 {
			chunks = append(chunks, bytes.NewReader(c[:n]))
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return io.NopCloser(io.MultiReader(chunks...))
		case err != nil:
			return io.NopCloser(failing{err})
		}
	}
}

// failing fails every read with err.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// mib says n bytes in MiB.
func mib(n int64) string {
	return strconv.FormatInt(n>>20, 10) + " MiB"
}

// limited reads body until more than left bytes came, and fails from then on with err.
type limited struct {
	body io.ReadCloser
	left int64
	err  error
}

func (b *limited) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		// One byte beyond the bound came: the answer is too long, whatever else it says.
		_ = b.body.Close()
		return n - 1, b.err
	}
	return n, err
}

func (b *limited) Close() error {
	return b.body.Close()
}
