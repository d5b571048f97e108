package authproxy

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HealthPath is what the kubelet's liveness probe asks for on the health listener.
const HealthPath = "/healthz"

// maxHealthRequest bounds what ServeHealth reads of one request: a probe's GET is a few
// hundred bytes.
const maxHealthRequest = 4096

// maxHealthConns bounds the health connections answered at once: the kubelet opens one per
// period, and nothing else should connect (the pod's NetworkPolicy admits only the node).
const maxHealthConns = 4

// ServeHealth answers the kubelet's HTTP liveness probe on l until ctx is done: GET HealthPath
// gets 200 while p accepts connections (Serve is running), 503 otherwise; any other request
// gets 404. The probe exists to restart a proxy that hangs: a stopped or wedged process never
// answers, although the kernel still completes a TCP handshake for it, which is why the probe
// is HTTP and not TCP. It is a minimal HTTP/1.x responder, not net/http, which would double the
// binary that runs in every pod with auth and metrics on; it closes every connection after one
// answer. It returns nil once ctx is done, or the error that stopped it accepting.
func ServeHealth(ctx context.Context, l net.Listener, p *Proxy) error {
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	slots := make(chan struct{}, maxHealthConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		default:
			_ = c.Close() // Busy: a probe that finds it so fails, and the next one counts.
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			answerHealth(c, p)
		}()
	}
}

// answerHealth reads one request's head from c and answers it.
func answerHealth(c net.Conn, p *Proxy) {
	defer c.Close() //nolint:errcheck // Nothing to do about it.
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var head []byte
	buf := make([]byte, 512)
	for !bytes.Contains(head, []byte("\r\n\r\n")) {
		if len(head) >= maxHealthRequest {
			return
		}
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			return
		}
	}
	line, _, _ := strings.Cut(string(head), "\r\n")
	method, rest, _ := strings.Cut(line, " ")
	target, _, _ := strings.Cut(rest, " ")
	status, body := "404 Not Found", "not found\n"
	switch {
	case method != "GET" || (target != HealthPath && !strings.HasPrefix(target, HealthPath+"?")):
	case p.Serving():
		status, body = "200 OK", "ok\n"
	default:
		status, body = "503 Service Unavailable", "not accepting connections\n"
	}
	_, _ = c.Write([]byte("HTTP/1.1 " + status + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body))
}
