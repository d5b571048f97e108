// Command memcached-auth-proxy runs beside memcached and the Prometheus exporter in a
// Memcached's pod when authentication is on: it authenticates each of the exporter's
// connections to memcached with the mounted credentials and relays it or, with SASL,
// translates the exporter's stats commands (package authproxy). It only wires flags and
// signals.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/example/function-memcached/internal/authproxy"
)

type cli struct {
	Listen           string        `help:"Loopback address to accept connections on." default:"127.0.0.1:11213"`
	Upstream         string        `help:"memcached's plaintext address." default:"127.0.0.1:11211"`
	UpstreamProtocol string        `help:"How memcached authenticates: text (--auth-file; relay bytes unchanged) or sasl (-S, binary protocol only; answer only the exporter's stats and version commands)." enum:"text,sasl" default:"text"`
	Credentials      string        `help:"Directory holding the files username and password (the mounted auth Secret)." default:"/etc/memcached/auth"`
	Timeout          time.Duration `help:"How long dialing and authenticating one connection, and with sasl answering one command, may take." default:"5s"`
	IdleTimeout      time.Duration `help:"With sasl, how long a connection may wait between commands before it is closed." default:"1m"`
	HealthListen     string        `help:"Address to answer the kubelet's liveness probe on (GET /healthz); empty answers none. The pod's IP, since the kubelet probes from the node." default:""`
}

// Run serves until SIGTERM or SIGINT.
func (c *cli) Run() error {
	creds, err := authproxy.LoadCredentials(c.Credentials)
	if err != nil {
		return err
	}
	l, err := authproxy.Listen(c.Listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "memcached-auth-proxy: relaying %s to %s (%s)\n", l.Addr(), c.Upstream, c.UpstreamProtocol)
	p := &authproxy.Proxy{Upstream: c.Upstream, Protocol: authproxy.Protocol(c.UpstreamProtocol), Credentials: creds,
		Timeout: c.Timeout, IdleTimeout: c.IdleTimeout,
		Log: func(msg string, kv ...any) {
			fmt.Fprintln(os.Stderr, append([]any{"memcached-auth-proxy:", msg}, kv...)...)
		}}
	if c.HealthListen == "" {
		return p.Serve(ctx, l)
	}
	hl, err := net.Listen("tcp", c.HealthListen)
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("cannot listen on %s for the liveness probe: %w", c.HealthListen, err)
	}
	// Either stopping stops both: a proxy without its health listener would be restarted
	// for nothing, and a health listener without a proxy would lie.
	ctx, cancel := context.WithCancel(ctx)
	health := make(chan error, 1)
	go func() {
		defer cancel()
		health <- authproxy.ServeHealth(ctx, hl, p)
	}()
	err = p.Serve(ctx, l)
	cancel()
	return errors.Join(err, <-health)
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("Authenticate the connections of a client that cannot (the memcached exporter) to memcached."))
	ctx.FatalIfErrorf(ctx.Run())
}
