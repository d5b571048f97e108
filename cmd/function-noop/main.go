// Command function-noop serves a function that does nothing, with the same server as
// function-memcached: the load tool's measure of the floor every function pays.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/example/function-memcached/internal/noop"
	"github.com/example/function-memcached/internal/server"
)

type cli struct {
	Address            string `help:"Address at which to listen for gRPC connections." default:":9443"`
	TLSServerCertsDir  string `help:"Directory containing tls.crt, tls.key and ca.crt." env:"TLS_SERVER_CERTS_DIR"`
	Insecure           bool   `help:"Run without mTLS credentials."`
	MaxRecvMessageSize int    `help:"Maximum size of received messages in MB." default:"4"`
	MetricsAddress     string `help:"Address at which to serve Prometheus metrics; empty disables them." default:":8080"`
}

func (c *cli) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return server.Serve(ctx, noop.Function{}, server.Options{
		Network: "tcp", Address: c.Address, TLSServerCertsDir: c.TLSServerCertsDir, Insecure: c.Insecure,
		MaxRecvMessageSize: c.MaxRecvMessageSize << 20, MetricsAddress: c.MetricsAddress, GracePeriod: 5 * time.Second,
	})
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("A composition function that does nothing, to measure the floor."))
	ctx.FatalIfErrorf(ctx.Run())
}
