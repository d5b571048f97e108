package cluster

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// conns are the network connections of one Cluster, which Stop closes: client-go would
// otherwise keep a transport, and its idle connections, for every TLS configuration it ever
// saw.
type conns struct {
	dialer net.Dialer

	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
}

func (cs *conns) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := cs.dialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		_ = c.Close()
		return nil, errors.New("the connection to the target cluster was closed")
	}
	t := &trackedConn{Conn: c, conns: cs}
	cs.open[t] = struct{}{}
	return t, nil
}

// closeAll closes every connection, and every one dialled from now on.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	open := cs.open
	cs.open = map[*trackedConn]struct{}{}
	cs.mu.Unlock()
	for c := range open {
		_ = c.Conn.Close()
	}
}

// count is how many connections are open.
func (cs *conns) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.open)
}

type trackedConn struct {
	net.Conn
	conns *conns
}

func (c *trackedConn) Close() error {
	c.conns.mu.Lock()
	delete(c.conns.open, c)
	c.conns.mu.Unlock()
	return c.Conn.Close()
}

// quietFor is how long a target cluster that did not answer a request within the request
// timeout is sent nothing: each request to it would otherwise hold one of the provider's
// workers for the whole timeout.
const quietFor = 30 * time.Second

// quiet remembers that a target cluster did not answer, and until when it is sent nothing.
type quiet struct {
	mu    sync.Mutex
	until time.Time
	err   error
}

func (q *quiet) failed(err error, after time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.until = time.Now().Add(quietFor)
	q.err = errors.Errorf("the target cluster did not answer within %s (%v): the provider sends it nothing until %s", after, err, q.until.UTC().Format(time.TimeOnly))
}

// refuse is why nothing is sent now; nil once the quiet time is over.
func (q *quiet) refuse() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if time.Now().Before(q.until) {
		return q.err
	}
	return nil
}

// timeout bounds each request of the client by after, and fails fast, without sending, a
// request to a cluster that recently let one run to that bound. The client never watches:
// kubeconfig.Untrusted has read an answer whole before RoundTrip returns, so the bound covers
// the body too.
type timeout struct {
	next  http.RoundTripper
	after time.Duration
	quiet *quiet
}

func (t *timeout) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.quiet.refuse(); err != nil {
		return nil, err
	}
	if t.after <= 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.after)
	defer cancel()
	rsp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Context().Err() == nil {
		t.quiet.failed(err, t.after)
	}
	return rsp, err
}
