package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// A ServiceProxy plays a Service's part for a client on the host: it listens on 127.0.0.1
// and forwards each connection to one ready endpoint of the Service (round robin), the way
// kube-proxy would forward a ClusterIP's. Crossplane runs on the host, where cluster DNS does
// not resolve, so it reaches the function's pod through one; the function's TLS certificate
// names 127.0.0.1.
//
// With no ready endpoint, or when the chosen one refuses, the connection is closed at once,
// as a Service without endpoints rejects it.
type ServiceProxy struct {
	// Addr is 127.0.0.1:<port>.
	Addr string

	l         net.Listener
	c         *kube.Client
	namespace string
	service   string
	port      string
	log       io.Writer

	mu        sync.Mutex
	endpoints []string
	next      int
	conns     map[net.Conn]struct{}
	// Forwarded counts the connections forwarded to an endpoint.
	Forwarded atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}
}

// ProxyService starts a ServiceProxy for the port named port of Service service in
// namespace. It polls the Service's EndpointSlices four times a second until Close, so that it
// follows pods coming and going (and rides out an API server restart on what it last saw).
func ProxyService(ctx context.Context, c *kube.Client, namespace, service, port string, log io.Writer) (*ServiceProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Wrap(err, "cannot listen for the service proxy")
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &ServiceProxy{Addr: l.Addr().String(), l: l, c: c, namespace: namespace, service: service, port: port, log: log,
		conns: map[net.Conn]struct{}{}, cancel: cancel, done: make(chan struct{})}
	go p.watch(ctx)
	go p.serve()
	return p, nil
}

// Endpoints returns the ready endpoints the proxy forwards to, as ip:port.
func (p *ServiceProxy) Endpoints() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.endpoints...)
}

func (p *ServiceProxy) watch(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if eps, err := p.ready(ctx); err == nil {
			p.mu.Lock()
			if fmt.Sprint(eps) != fmt.Sprint(p.endpoints) {
				fmt.Fprintf(p.log, "%s proxy %s -> %s/%s:%s endpoints %v\n", time.Now().Format(time.RFC3339Nano), p.Addr, p.namespace, p.service, p.port, eps)
			}
			p.endpoints = eps
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ready lists the ready endpoints of the Service's port.
func (p *ServiceProxy) ready(ctx context.Context) ([]string, error) {
	list, err := p.c.Typed.DiscoveryV1().EndpointSlices(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + p.service})
	if err != nil {
		return nil, err
	}
	var eps []string
	for _, s := range list.Items {
		var port int32
		for _, sp := range s.Ports {
			if sp.Name != nil && *sp.Name == p.port && sp.Port != nil {
				port = *sp.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				for _, a := range e.Addresses {
					eps = append(eps, net.JoinHostPort(a, strconv.Itoa(int(port))))
				}
			}
		}
	}
	return eps, nil
}

func (p *ServiceProxy) pick() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.endpoints) == 0 {
		return ""
	}
	p.next = (p.next + 1) % len(p.endpoints)
	return p.endpoints[p.next]
}

func (p *ServiceProxy) serve() {
	defer close(p.done)
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *ServiceProxy) forward(in net.Conn) {
	defer in.Close() //nolint:errcheck // Closing either way.
	ep := p.pick()
	if ep == "" {
		return
	}
	out, err := net.DialTimeout("tcp", ep, 2*time.Second)
	if err != nil {
		fmt.Fprintf(p.log, "%s proxy %s -> %s: %v\n", time.Now().Format(time.RFC3339Nano), p.Addr, ep, err)
		return
	}
	defer out.Close() //nolint:errcheck // Closing either way.
	if !p.track(in, out) {
		return
	}
	defer p.untrack(in, out)
	p.Forwarded.Add(1)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
}

func (p *ServiceProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *ServiceProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// Close stops listening and polling and closes every forwarded connection.
func (p *ServiceProxy) Close() error {
	p.cancel()
	err := p.l.Close()
	<-p.done
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	return errors.Wrap(err, "cannot close the service proxy")
}
